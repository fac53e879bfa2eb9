#include "model_store/demo/retrieval/roff_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::model_store {
namespace {

using ::testing::ElementsAre;

TEST(RoffParagraphs, KeepsProseAndFontMacroWordsAndDropsRequestsAndComments) {
  const char* page =
      ".\\\" Copyright line, a comment\n"
      ".TH open 2 2023-02-05 \"Linux man-pages 6.03\"\n"
      ".SH NAME\n"
      "open, openat \\- open and possibly create a file\n"
      ".SH DESCRIPTION\n"
      "The\n"
      ".BR open ()\n"
      "system call opens the file specified by\n"
      ".IR pathname .\n"
      ".PP\n"
      "A call to \\fBopen\\fP() creates a new \\fIopen file description\\fR\\(emsee\n"
      ".BR errno (3).\n";
  EXPECT_THAT(RoffParagraphs(page),
              ElementsAre("NAME", "open, openat - open and possibly create a file", "DESCRIPTION",
                          "The open () system call opens the file specified by pathname .",
                          "A call to open() creates a new open file description see errno (3)."));
}

TEST(RoffParagraphs, DropsNoFillBlocksSuchAsSynopsesAndExamples) {
  const char* page =
      "Before the code.\n"
      ".nf\n"
      "int fd = open(path, O_RDONLY);\n"
      ".fi\n"
      "After it.\n"
      ".EX\n"
      "close(fd);\n"
      ".EE\n"
      "\n"
      "Next paragraph.\n";
  EXPECT_THAT(RoffParagraphs(page), ElementsAre("Before the code.", "After it.", "Next paragraph."));
}

TEST(RoffParagraphs, ResolvesEscapesAndSurvivesTruncatedOnes) {
  EXPECT_THAT(RoffParagraphs("a\\-b \\e c \\*(lqquoted\\*(rq \\s-1SMALL\\s0 \\[em] d\\&e \\f(CWmono"),
              ElementsAre("a-b \\ c quoted SMALL de mono"));
  // Escapes cut at the end of the text neither read past it nor keep half a name.
  EXPECT_THAT(RoffParagraphs("x \\f"), ElementsAre("x"));
  EXPECT_THAT(RoffParagraphs("x \\[unterminated"), ElementsAre("x"));
  EXPECT_THAT(RoffParagraphs("x \\(e"), ElementsAre("x"));
  EXPECT_THAT(RoffParagraphs("x \\"), ElementsAre("x"));
  EXPECT_THAT(RoffParagraphs(""), ElementsAre());
}

}  // namespace
}  // namespace embedding::model_store
