// Rerank's and Classify's scores from merged logits: each score function against its formula,
// raw logits untouched, and the ranking's order, ties and cut.
#include "server/core/scoring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace embedding::server {
namespace {

using model_store::ScoreFunction;
using ::testing::ElementsAre;

ScoredInput Scored(uint32_t index, float score) {
  ScoredInput input;
  input.index = index;
  input.scores = {score};
  return input;
}

TEST(Scoring, EachScoreFunctionIsItsFormula) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f};
  const std::vector<float> sigmoid = ScoresOf(logits, ScoreFunction::kSigmoid, false);
  for (size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(sigmoid[i], 1.0 / (1.0 + std::exp(-logits[i])), 1e-7);
  const std::vector<float> softmax = ScoresOf(logits, ScoreFunction::kSoftmax, false);
  double total = 0;
  for (float x : logits) total += std::exp(x);
  for (size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(softmax[i], std::exp(logits[i]) / total, 1e-7);
  EXPECT_EQ(ScoresOf(logits, ScoreFunction::kIdentity, false), logits);
  EXPECT_EQ(ScoresOf(logits, ScoreFunction::kSoftmax, true), logits);  // raw_scores
  // Softmax subtracts the largest logit first: no overflow at 1,000.
  const std::vector<float> large = ScoresOf({1000.0f, 999.0f}, ScoreFunction::kSoftmax, false);
  EXPECT_NEAR(large[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(Scoring, RankingIsByDescendingScoreTiesByIndexAndCutAtTopN) {
  std::vector<ScoredInput> results = {Scored(0, 0.2f), Scored(1, 0.9f), Scored(2, 0.2f),
                                      Scored(3, 0.5f)};
  RankResults(&results, std::nullopt);
  std::vector<uint32_t> order;
  for (const ScoredInput& r : results) order.push_back(r.index);
  EXPECT_THAT(order, ElementsAre(1, 3, 0, 2));
  RankResults(&results, 2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].index, 3u);
  RankResults(&results, 10);  // more than there are: all of them
  EXPECT_EQ(results.size(), 2u);
}

TEST(Scoring, DocumentsCarryTheirChunksScoresAndSpans) {
  EmbedResult result;
  DocumentResult doc;
  doc.vector = {1.0f};
  doc.token_count = 700;
  doc.chunk_count = 2;
  ChunkResult first, second;
  first.vector = {1.0f};
  first.tokens = {0, 400};
  second.vector = {-3.0f};
  second.tokens = {380, 700};
  doc.chunks = {first, second};
  result.documents = {doc};
  const std::vector<ScoredInput> scored =
      ScoreDocuments(&result, ScoreFunction::kSigmoid, false, true);
  ASSERT_EQ(scored.size(), 1u);
  EXPECT_NEAR(scored[0].scores[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  ASSERT_EQ(scored[0].chunks.size(), 2u);
  EXPECT_NEAR(scored[0].chunks[1].scores[0], 1.0 / (1.0 + std::exp(3.0)), 1e-7);
  EXPECT_EQ(scored[0].chunks[1].tokens, (Span{380, 700}));
  EXPECT_EQ(scored[0].token_count, 700u);
  EXPECT_TRUE(ScoreDocuments(&result, ScoreFunction::kSigmoid, false, false)[0].chunks.empty());
}

}  // namespace
}  // namespace embedding::server
