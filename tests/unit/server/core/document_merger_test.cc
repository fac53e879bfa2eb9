// The last step of the request path, in process: chunk vectors merged by each strategy's
// rule, late chunking's window folding, spans reported without the prompt, and `dimensions`,
// each against a computation written out here.
#include "server/core/document_merger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "server/core/chunk_planner.h"
#include "server/core/vector_math.h"

namespace embedding::server {
namespace {

std::vector<float> Normalized(std::vector<float> v) {
  double sum = 0;
  for (float x : v) sum += double{x} * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(sum));
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
}

// A document of `tokens` one-byte tokens "abc..." after `prompt`, planned with `params`.
EncodedDocument Document(uint32_t tokens, uint32_t window, const EmbedParams& params,
                         const std::string& prompt = "") {
  EncodedDocument doc;
  doc.prompt_bytes = static_cast<uint32_t>(prompt.size());
  doc.text = prompt;
  for (uint32_t t = 0; t < tokens; ++t) {
    doc.tokens.ids.push_back(static_cast<int32_t>(t));
    doc.tokens.spans.push_back(
        {static_cast<uint32_t>(doc.text.size()), static_cast<uint32_t>(doc.text.size() + 1)});
    doc.text.push_back(static_cast<char>('a' + t % 26));
  }
  doc.plan = PlanChunks(tokens, window, params, "inputs[0]").value();
  PrepareSlots(&doc, params.traits.needs_token_states, 2);
  return doc;
}

TEST(MergeChunkVectors, EachRuleAgainstItsFormula) {
  const std::vector<std::vector<float>> chunks = {{1, -2}, {3, 4}, {-5, 0}};
  const std::vector<uint32_t> weights = {1, 2, 7};
  ExpectNear(MergeChunkVectors(MergeRule::kMean, chunks, weights), {-1.0f / 3, 2.0f / 3});
  ExpectNear(MergeChunkVectors(MergeRule::kTokenWeightedMean, chunks, weights),
             {(1 + 6 - 35) / 10.0f, (-2 + 8 + 0) / 10.0f});
  ExpectNear(MergeChunkVectors(MergeRule::kMax, chunks, weights), {3, 4});
}

TEST(MergeDocument, ChunkMeanNormalisesEachChunkThenTheMean) {
  EmbedParams params;
  params.SetStrategy(Strategy::kChunkMean);
  params.chunk_tokens = 4;
  EncodedDocument doc = Document(10, 8, params);
  ASSERT_EQ(doc.plan.chunks.size(), 3u);
  doc.pooled = {{3, 4}, {0, 2}, {-1, 0}};
  const DocumentResult out = MergeDocument(doc, params, 2);
  const std::vector<float> mean = {(0.6f + 0 - 1) / 3, (0.8f + 1 + 0) / 3};
  ExpectNear(out.vector, Normalized(mean));
  ExpectNear(out.collapse_vector, Normalized(mean));
  EXPECT_EQ(out.chunk_count, 3u);
  EXPECT_TRUE(out.chunks.empty());  // only CHUNK_ALL and late chunking return chunks
}

TEST(MergeDocument, ChunkAllSpansLeaveThePromptOutAndDimensionsRenormalise) {
  EmbedParams params;
  params.SetStrategy(Strategy::kChunkAll);
  params.chunk_tokens = 3;
  params.dimensions = 1;
  EncodedDocument doc = Document(5, 8, params, "query: ");
  doc.pooled = {{3, 4}, {-6, 8}};
  const DocumentResult out = MergeDocument(doc, params, 2);
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].tokens, (Span{0, 3}));
  EXPECT_EQ(out.chunks[1].tokens, (Span{3, 5}));
  // Byte and char spans index the input, not prompt + input.
  EXPECT_EQ(out.chunks[0].bytes, (Span{0, 3}));
  EXPECT_EQ(out.chunks[1].bytes, (Span{3, 5}));
  EXPECT_EQ(out.chunks[1].chars, (Span{3, 5}));
  // One dimension, renormalised: the sign of the first component.
  ExpectNear(out.chunks[0].vector, {1});
  ExpectNear(out.chunks[1].vector, {-1});
  EXPECT_EQ(out.vector.size(), 1u);
  EXPECT_EQ(out.collapse_vector.size(), 2u);  // the metrics see every dimension
  ExpectNear(out.collapse_vector, Normalized({0.6f - 0.6f, 0.8f + 0.8f}));
}

TEST(MergeDocument, LateChunkingFoldsEachTokenFromItsMostCentralWindow) {
  EmbedParams params;
  params.SetStrategy(Strategy::kLateChunking);
  params.chunk_tokens = 4;
  EncodedDocument doc = Document(12, 8, params);
  ASSERT_GE(doc.plan.sequences.size(), 2u);
  // Window w's state for content token t is (t, w); one special token before, one after.
  for (size_t w = 0; w < doc.plan.sequences.size(); ++w) {
    const Span& range = doc.plan.sequences[w];
    std::vector<float> states = {-100, -100};
    for (uint32_t t = range.begin; t < range.end; ++t) {
      states.push_back(static_cast<float>(t));
      states.push_back(static_cast<float>(w));
    }
    states.insert(states.end(), {-100, -100});
    AddLateChunkWindow(&doc, w, states, 2, 1);
  }
  params.normalize = false;
  const DocumentResult out = MergeDocument(doc, params, 2);
  ASSERT_EQ(out.chunks.size(), 3u);
  for (size_t c = 0; c < out.chunks.size(); ++c) {
    const Span& chunk = doc.plan.chunks[c];
    double t_sum = 0, w_sum = 0;
    for (uint32_t t = chunk.begin; t < chunk.end; ++t) {
      t_sum += t;
      w_sum += doc.plan.token_window[t];
    }
    ExpectNear(out.chunks[c].vector, {static_cast<float>(t_sum / chunk.size()),
                                      static_cast<float>(w_sum / chunk.size())});
  }
}

}  // namespace
}  // namespace embedding::server
