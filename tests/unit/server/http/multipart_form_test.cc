// The multipart/form-data reader against bodies as RFC 7578 and the SDKs write them, and the
// malformed ones it must refuse, naming Content-Type or body.
#include "server/http/multipart_form.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

const char kType[] = "multipart/form-data; boundary=XyZ";

std::string Form(const std::string& file) {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
         "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a;b \\\"c\\\".jsonl\""
         "\r\nContent-Type: application/octet-stream\r\n\r\n" +
         file + "\r\n--XyZ--\r\n";
}

TEST(MultipartForm, ReadsFieldsAndFileBytesAsSent) {
  // The file holds CRLFs, a line that starts like a delimiter, and NUL bytes.
  const std::string file = std::string("{\"a\":1}\r\n--XyZnot\r\n\0\0end", 22);
  const std::string body = Form(file);
  auto parts = ParseMultipartForm(kType, body);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[0].data, "batch");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "a;b \"c\".jsonl");
  EXPECT_EQ(std::string((*parts)[1].data), file);
}

TEST(MultipartForm, QuotedBoundaryPreambleAndEmptyFile) {
  const std::string body =
      "preamble\r\n--a b\r\nContent-Disposition: form-data; name=file; filename=x\r\n\r\n"
      "\r\n--a b--";
  auto parts = ParseMultipartForm("Multipart/Form-Data; charset=utf-8; boundary=\"a b\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].filename, "x");
  EXPECT_EQ((*parts)[0].data, "");
}

TEST(MultipartForm, RefusalsNameTheHeaderOrTheBody) {
  struct Case {
    std::string type, body, field;
  } cases[] = {
      {"application/json", "{}", "Content-Type:"},
      {"multipart/form-data", Form("x"), "Content-Type:"},
      {"multipart/form-data; boundary=" + std::string(71, 'b'), Form("x"), "Content-Type:"},
      {kType, "no delimiter at all", "body:"},
      {kType, "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nnever closed", "body:"},
      {kType, "--XyZ\r\nX-Other: 1\r\n\r\ndata\r\n--XyZ--", "body:"},  // no name
      {kType, "--XyZ\r\n\r\ndata\r\n--XyZ--", "body:"},                // no headers
  };
  for (const Case& c : cases) {
    auto parts = ParseMultipartForm(c.type, c.body);
    ASSERT_FALSE(parts.ok()) << c.body;
    EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parts.status().message()), ::testing::StartsWith(c.field)) << c.body;
  }
}

TEST(MultipartForm, BoundsTheNumberOfParts) {
  std::string body;
  for (int i = 0; i < 3; ++i) body += "--XyZ\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nv\r\n";
  body += "--XyZ--\r\n";
  EXPECT_TRUE(ParseMultipartForm(kType, body, 3).ok());
  auto parts = ParseMultipartForm(kType, body, 2);
  ASSERT_FALSE(parts.ok());
  EXPECT_THAT(std::string(parts.status().message()), HasSubstr("more than 2 parts"));
}

}  // namespace
}  // namespace embedding::server
