// The uniqueness rule's pieces against their definitions: the normalisation is at least as
// coarse as a tokenizer's (case, compatibility forms, accents, invisible and spacing code
// points), occurrences overlap, and a pool refuses every pair that would give a query two
// answers.
#include "client/embedctl/task_uniqueness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::client {
namespace {

TEST(NormalizedText, FoldsWhatATokenizerWouldNotTellApart) {
  EXPECT_EQ(NormalizedText("  Error:\tConnection\n\nREFUSED  "), "error:connectionrefused");
  // Pre-tokenizers split at punctuation: spacing around it makes no other tokens.
  EXPECT_EQ(NormalizedText("disk : full"), NormalizedText("disk: full"));
  EXPECT_EQ(NormalizedText("ﬁle"), "file");                   // NFKC: the ligature
  EXPECT_EQ(NormalizedText("Café Straße"), "cafestrasse");    // accents; full case folding
  EXPECT_EQ(NormalizedText("zero\u200Bwidth"), "zerowidth");  // default-ignorable
  EXPECT_EQ(NormalizedText("no\u00A0break\u2028line"), "nobreakline");  // Zs, Zl
  EXPECT_EQ(NormalizedText("e\u0301"), NormalizedText("\u00E9"));       // NFD and NFC agree
  EXPECT_EQ(NormalizedText("bad \xff byte"),
            "bad\xff"
            "byte");  // not UTF-8: bytes kept
}

TEST(CountOccurrences, CountsOverlappingOnesAndNothingForAnEmptyNeedle) {
  EXPECT_EQ(CountOccurrences("aaaa", "aa"), 3u);
  EXPECT_EQ(CountOccurrences("the key is 1. the key is 2.", "the key is"), 2u);
  EXPECT_EQ(CountOccurrences("abc", "abcd"), 0u);
  EXPECT_EQ(CountOccurrences("abc", ""), 0u);
}

TEST(UniquePool, RefusesEveryPairThatWouldGiveAQueryTwoAnswers) {
  UniquePool pool("the shared haystack text about rivers");
  EXPECT_TRUE(
      pool.TryAdd("the shared haystack text about rivers. Alpha beta gamma.", "alpha beta"));
  // Its own answer must hold the query.
  EXPECT_FALSE(pool.TryAdd("the shared haystack text about rivers. Delta.", "epsilon"));
  // A query the haystack holds is in every candidate.
  EXPECT_FALSE(pool.TryAdd("the shared haystack text about rivers. About rivers.", "About Rivers"));
  // A document equal to a member (after normalisation).
  EXPECT_FALSE(pool.TryAdd("The shared  haystack text about rivers. ALPHA beta gamma.", "gamma"));
  // A member's query in the new document, and the new query in a member.
  EXPECT_FALSE(pool.TryAdd("the shared haystack text about rivers. alpha beta delta.", "delta"));
  EXPECT_FALSE(pool.TryAdd("the shared haystack text about rivers. beta gamma!", "beta gamma"));
  EXPECT_FALSE(pool.TryAdd("the shared haystack text about rivers. gamma", "gamma"));
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_TRUE(pool.TryAdd("the shared haystack text about rivers. Delta epsilon.", "delta"));
  EXPECT_EQ(pool.size(), 2u);
}

TEST(QuerySpanCounts, CountsEachQueryInEveryCandidateOfItsOwnPool) {
  const std::vector<std::string> documents = {"a b a b", "c d", "a x", "y"};
  const std::vector<std::string> queries = {"A B", "c", "a", "Z"};
  EXPECT_THAT(QuerySpanCounts(documents, queries, 2),
              ::testing::ElementsAre(::testing::ElementsAre(2, 0), ::testing::ElementsAre(0, 1),
                                     ::testing::ElementsAre(1, 0), ::testing::ElementsAre(0, 0)));
}

}  // namespace
}  // namespace embedding::client
