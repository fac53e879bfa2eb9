// Flag spelling and environment fallbacks, shared by embedding_server and embedctl.
#include "common/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/flags/flag.h"

ABSL_FLAG(int, test_batch_size, 4, "A flag of this file, for the fallback test.");

namespace embedding {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CommandLine, FlagNamesTakeUnderscoresAndValuesAreUntouched) {
  const char* argv[] = {
      "prog", "--max-batch-tokens=3", "--a-b", "value-with-dashes", "--prompt=x-y", "-v"};
  EXPECT_THAT(UnderscoreFlagNames(6, const_cast<char**>(argv)),
              ElementsAre("prog", "--max_batch_tokens=3", "--a_b", "value-with-dashes",
                          "--prompt=x-y", "-v"));
}

TEST(CommandLine, EveryFlagOfAFileFallsBackToItsVariable) {
  EXPECT_EQ(EnvironmentName("EMBEDDING", "max_batch_tokens"), "EMBEDDING_MAX_BATCH_TOKENS");
  setenv("UNITTEST_TEST_BATCH_SIZE", "17", 1);
  ASSERT_TRUE(ApplyEnvironmentFallbacks("UNITTEST", "unit/common/command_line_test.cc").ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_batch_size), 17);
  // Flags of other files are not read from this prefix.
  setenv("UNITTEST_TEST_BATCH_SIZE", "not a number", 1);
  EXPECT_TRUE(ApplyEnvironmentFallbacks("UNITTEST", "elsewhere.cc").ok());
  const absl::Status bad =
      ApplyEnvironmentFallbacks("UNITTEST", "unit/common/command_line_test.cc");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("UNITTEST_TEST_BATCH_SIZE=not a number"));
  unsetenv("UNITTEST_TEST_BATCH_SIZE");
}

}  // namespace
}  // namespace embedding
