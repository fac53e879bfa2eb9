// The token budget of a forward pass: the CPU's fixed default, and a GPU's sized from its
// memory at the model's measured cost per token, with refusals that name the flag.
#include "server/core/batch_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGib = int64_t{1} << 30;

TEST(ResolveBatchTokens, TheCpuTakesTheFlagOrItsDefault) {
  EXPECT_EQ(*ResolveBatchTokens(0, nullptr), kCpuBatchTokens);
  EXPECT_EQ(*ResolveBatchTokens(777, nullptr), 777);
}

// 80 GiB, 60 available with the weights in, 10% kept back (8 GiB): 52 GiB at 1 MiB a token is
// 53,248 tokens, a multiple of 64; at 256 KiB a token it would be 212,992, capped.
TEST(ResolveBatchTokens, AGpuTakesWhatItsMemoryHoldsUpToTheCap) {
  DeviceBudget gpu{60 * kGib, 80 * kGib, 1 << 20, 0.9, 512, "cuda:0"};
  EXPECT_EQ(*ResolveBatchTokens(0, &gpu), 53248);
  gpu.bytes_per_token = 1 << 18;
  EXPECT_EQ(*ResolveBatchTokens(0, &gpu), kMaxAutoDeviceBatchTokens);
  gpu.bytes_per_token = 3 << 20;  // 17,749.3 tokens: down to 17,728, a step of 64
  EXPECT_EQ(*ResolveBatchTokens(0, &gpu), 17728);
  EXPECT_EQ(*ResolveBatchTokens(16384, &gpu), 16384);  // a count that fits stays
}

// A window longer than the cap is still one batch: one sequence must always fit.
TEST(ResolveBatchTokens, OneWindowAlwaysFitsABatch) {
  const DeviceBudget gpu{100 * kGib, 141 * kGib, 1024, 0.95, 131072, "cuda:0"};
  EXPECT_EQ(*ResolveBatchTokens(0, &gpu), 131072);
}

TEST(ResolveBatchTokens, ACountAboveWhatTheMemoryHoldsIsRefusedWithTheMost) {
  const DeviceBudget gpu{60 * kGib, 80 * kGib, 1 << 20, 0.9, 512, "cuda:0"};
  const auto refused = ResolveBatchTokens(60000, &gpu);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("--max_batch_tokens=60000: cuda:0 has 52.00 GiB for forward passes "
                        "(60.00 GiB available, 8.00 GiB kept back) at 1048576 bytes per token; "
                        "at most 53248"));
}

TEST(ResolveBatchTokens, ADeviceThatCannotHoldOneWindowIsRefusedNamingTheShare) {
  // 9 GiB available of 80 at 0.9: 1 GiB usable, 1,024 tokens at 1 MiB, below 8,192.
  const DeviceBudget gpu{9 * kGib, 80 * kGib, 1 << 20, 0.9, 8192, "cuda:1"};
  const auto refused = ResolveBatchTokens(0, &gpu);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("--gpu_memory_utilization=0.9: cuda:1 has 1.00 GiB for forward passes"));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("which holds 1024 tokens, not one window of 8192"));
  // Nothing available at all (another process holds the device): refused, never negative.
  const DeviceBudget full{0, 80 * kGib, 1 << 20, 0.9, 512, "cuda:0"};
  EXPECT_THAT(std::string(ResolveBatchTokens(0, &full).status().message()),
              HasSubstr("has 0.00 GiB for forward passes"));
}

}  // namespace
}  // namespace embedding::server
