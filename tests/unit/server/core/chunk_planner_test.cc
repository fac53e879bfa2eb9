// The chunk planner: split-range edges, late-chunking windows, truncation, REJECT.
#include "server/core/chunk_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

EmbedParams Params(Strategy strategy, uint32_t chunk = 10, uint32_t overlap = 0) {
  EmbedParams p;
  p.SetStrategy(strategy);
  p.chunk_tokens = chunk;
  p.overlap_tokens = overlap;
  return p;
}

TEST(SplitRanges, EdgesAndOverlap) {
  auto r = SplitRanges(0, 10, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].size(), 0u);
  EXPECT_EQ(SplitRanges(10, 10, 0).size(), 1u);  // exactly one window
  r = SplitRanges(11, 10, 0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].begin, 10u);
  EXPECT_EQ(r[1].end, 11u);    // the last range may be short
  r = SplitRanges(25, 10, 4);  // stride 6: 0, 6, 12, 18 (ends at 25 >= 25)
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i - 1].end - r[i].begin, 4u);
  EXPECT_EQ(r.back().end, 25u);
}

TEST(PlanChunks, TruncateKeepsTheStartOrTheEnd) {
  auto start = PlanChunks(30, 10, Params(Strategy::kTruncate), "inputs[0]");
  ASSERT_TRUE(start.ok());
  EXPECT_TRUE(start->truncated);
  EXPECT_EQ(start->chunks[0].begin, 0u);
  EXPECT_EQ(start->chunks[0].end, 10u);
  auto params = Params(Strategy::kTruncate);
  params.keep_end = true;
  auto end = PlanChunks(30, 10, params, "inputs[0]");
  EXPECT_EQ(end->chunks[0].begin, 20u);
  EXPECT_EQ(end->chunks[0].end, 30u);
  auto fits = PlanChunks(10, 10, params, "inputs[0]");
  EXPECT_FALSE(fits->truncated);
}

TEST(PlanChunks, RejectNamesTheFieldAndTheWindow) {
  auto plan = PlanChunks(11, 10, Params(Strategy::kReject), "inputs[3]");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("inputs[3]: 11 tokens"));
  EXPECT_THAT(plan.status().message(), HasSubstr("[0, 10]"));
  EXPECT_TRUE(PlanChunks(10, 10, Params(Strategy::kReject), "x").ok());
}

TEST(PlanChunks, LateChunkingWindowsCoverEveryTokenFromItsMostCentralWindow) {
  const uint32_t tokens = 1000, window = 100;
  auto plan = PlanChunks(tokens, window, Params(Strategy::kLateChunking, 30, 5), "inputs[0]");
  ASSERT_TRUE(plan.ok());
  for (const auto& w : plan->sequences) EXPECT_EQ(w.size(), window);  // every window full
  EXPECT_EQ(plan->sequences.back().end, tokens);
  ASSERT_EQ(plan->token_window.size(), tokens);
  for (uint32_t t = 0; t < tokens; ++t) {
    const Span& chosen = plan->sequences[plan->token_window[t]];
    ASSERT_GE(t, chosen.begin);
    ASSERT_LT(t, chosen.end);
    const int64_t margin = std::min<int64_t>(t - chosen.begin, chosen.end - 1 - t);
    for (const auto& w : plan->sequences) {  // no window holding t gives it more context
      if (t >= w.begin && t < w.end) {
        EXPECT_LE(std::min<int64_t>(t - w.begin, w.end - 1 - t), margin) << "token " << t;
      }
    }
  }
  EXPECT_EQ(plan->chunks, SplitRanges(tokens, 30, 5));
}

TEST(PlanChunks, ShortLateChunkingDocumentIsOneWindow) {
  auto plan = PlanChunks(7, 100, Params(Strategy::kLateChunking, 3), "x");
  ASSERT_EQ(plan->sequences.size(), 1u);
  EXPECT_EQ(plan->sequences[0].size(), 7u);
  EXPECT_EQ(plan->chunks.size(), 3u);
}

}  // namespace
}  // namespace embedding::server
