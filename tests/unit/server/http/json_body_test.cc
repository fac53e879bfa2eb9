#include "server/http/json_body.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

TEST(FindLongestJsonString, CountsDecodedBytesAndNamesTheKeyAbove) {
  // "\u00e9" is 2 bytes of UTF-8, a surrogate pair 4, "\n" 1: 3 + 2 + 4 + 1 = 10.
  const auto longest =
      FindLongestJsonString(R"({"model": "m", "input": ["ab", "abc\u00e9\ud83d\ude00\n"]})");
  EXPECT_EQ(longest.bytes, 10u);
  EXPECT_EQ(longest.key, "input");
  // A key longer than every value is reported as the body's own.
  EXPECT_EQ(FindLongestJsonString(R"({"a long key": "x"})").key, "");
  EXPECT_EQ(FindLongestJsonString(R"({"a long key": "x"})").bytes, 10u);
  // An escaped quote does not end the string; an unterminated one runs to the end.
  EXPECT_EQ(FindLongestJsonString(R"({"k": "a\"b"})").bytes, 3u);
  EXPECT_EQ(FindLongestJsonString(R"({"k": "abcd)").bytes, 4u);
  EXPECT_EQ(FindLongestJsonString("").bytes, 0u);
}

TEST(ParseJsonObject, RefusesAStringPastOneInputsBytesBeforeParsing) {
  RequestLimits limits;
  limits.max_tokens_per_document = 1;  // 16 bytes per string
  EXPECT_TRUE(ParseJsonObject(R"({"inputs": ["0123456789abcdef"]})", limits).ok());
  const auto refused = ParseJsonObject(R"({"inputs": ["0123456789abcdefg"]})", limits);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "inputs: a string of 17 bytes exceeds the bound; allowed [0, 16] (16 bytes for each "
            "token --max-tokens-per-document allows)");
  // Checked before parsing: the same string in a body that would not parse is refused by size.
  EXPECT_THAT(ParseJsonObject(R"({"inputs": "0123456789abcdefg)", limits).status().message(),
              HasSubstr("inputs: a string of 17 bytes"));
  EXPECT_THAT(ParseJsonObject(R"({"inputs": )", limits).status().message(),
              HasSubstr("body: not valid JSON"));
}

}  // namespace
}  // namespace embedding::server
