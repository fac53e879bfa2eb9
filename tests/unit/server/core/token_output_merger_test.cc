// bge-m3's sparse and multi-vector merging in process, against the formulas of
// token_output_merger.h written out here: per id the max weight over its occurrences (dropped
// ids and weights <= 0 left out), every content token's vector once in document order (a
// token two chunks share keeps the earlier chunk's; under late chunking the window the planner
// gave it), then the last sequence's end rows; chunks get their own; max_vectors pools runs of
// neighbours. Each strategy that plans chunks, and late chunking, with and without overlap.
#include "server/core/token_output_merger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace embedding::server {
namespace {

constexpr size_t kDim = 2;
constexpr size_t kPrefix = 1;  // [CLS]
constexpr size_t kSuffix = 1;  // [SEP]
const std::set<int32_t> kDropped = {100};

// A row's vector and weight, distinct per (sequence, row) so a wrong pick shows.
float Weight(size_t s, size_t row) { return 0.1f * static_cast<float>(s * 10 + row) - 0.15f; }
std::vector<float> Vector(size_t s, size_t row) {
  return {static_cast<float>(s * 10 + row), 1.0f + static_cast<float>(s)};
}

struct Merged {
  ChunkPlan plan;
  DocumentResult doc;
};

// Plans `ids` under `strategy` and folds each sequence's rows (prefix, content, suffix) in, as
// the job does, then merges.
Merged FoldAndMerge(const std::vector<int32_t>& ids, Strategy strategy, uint32_t chunk,
                    uint32_t overlap, uint32_t window, uint32_t max_vectors = 0) {
  EmbedParams params;
  params.SetStrategy(strategy);
  params.chunk_tokens = chunk;
  params.overlap_tokens = overlap;
  params.sparse = params.multi_vector = true;
  params.max_vectors = max_vectors;
  Merged out;
  out.plan = PlanChunks(static_cast<uint32_t>(ids.size()), window, params, "inputs[0]").value();
  const bool late = params.traits.needs_token_states;
  TokenOutputState state;
  PrepareTokenOutputs(&state, out.plan, ids.size(), late, params, kDim);
  for (size_t s = 0; s < out.plan.sequences.size(); ++s) {
    const size_t rows = kPrefix + out.plan.sequences[s].size() + kSuffix;
    std::vector<float> weights, vectors;
    for (size_t r = 0; r < rows; ++r) {
      weights.push_back(Weight(s, r));
      for (float v : Vector(s, r)) vectors.push_back(v);
    }
    FoldTokenOutputs(&state, out.plan, ids, s, late, kPrefix, /*keep_prefix=*/false, kDropped,
                     weights, vectors, kDim);
  }
  out.doc.chunks.resize(out.plan.chunks.size());
  MergeTokenOutputs(state, out.plan, ids, late, kDropped, LateRows{}, params, kDim, &out.doc);
  return out;
}

// The sequence and row a content token's outputs come from: under late chunking the
// planner's window, else the first sequence that holds it.
std::pair<size_t, size_t> Source(const ChunkPlan& plan, uint32_t t, bool late) {
  for (size_t s = 0; s < plan.sequences.size(); ++s) {
    const Span& range = plan.sequences[s];
    if (t < range.begin || t >= range.end) continue;
    if (late && plan.token_window[t] != s) continue;
    return {s, kPrefix + (t - range.begin)};
  }
  ADD_FAILURE() << "token " << t << " in no sequence";
  return {0, 0};
}

// Sparse over tokens [begin, end): the max weight per kept id, by each token's source row;
// for non-late chunks the max over every sequence holding it (each chunk sees its own).
std::map<int32_t, float> ExpectedSparse(const Merged& m, const std::vector<int32_t>& ids,
                                        uint32_t begin, uint32_t end, bool late) {
  std::map<int32_t, float> out;
  for (size_t s = 0; s < m.plan.sequences.size(); ++s) {
    const Span& range = m.plan.sequences[s];
    for (uint32_t t = std::max(begin, range.begin); t < std::min(end, range.end); ++t) {
      if (late && m.plan.token_window[t] != s) continue;
      const float w = Weight(s, kPrefix + (t - range.begin));
      if (kDropped.count(ids[t]) || w <= 0) continue;
      out[ids[t]] = std::max(out.count(ids[t]) ? out[ids[t]] : 0.0f, w);
    }
  }
  return out;
}

void ExpectSparse(const SparseResult& got, const std::map<int32_t, float>& want) {
  ASSERT_EQ(got.ids.size(), want.size());
  size_t i = 0;
  for (const auto& [id, weight] : want) {
    EXPECT_EQ(got.ids[i], id);
    EXPECT_FLOAT_EQ(got.weights[i], weight) << "id " << id;
    ++i;
  }
}

void ExpectRows(const MultiVectorResult& got, const std::vector<std::vector<float>>& rows,
                const std::vector<Span>& spans) {
  ASSERT_EQ(got.count(), rows.size());
  ASSERT_EQ(got.values.size(), rows.size() * kDim);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(got.token_spans[r], spans[r]) << "row " << r;
    for (size_t d = 0; d < kDim; ++d) EXPECT_FLOAT_EQ(got.values[r * kDim + d], rows[r][d]);
  }
}

// The document's multi-vector: each content token's source row, then the last sequence's end.
void ExpectDocumentVectors(const Merged& m, size_t tokens, bool late) {
  std::vector<std::vector<float>> rows;
  std::vector<Span> spans;
  for (uint32_t t = 0; t < tokens; ++t) {
    const auto [s, row] = Source(m.plan, t, late);
    rows.push_back(Vector(s, row));
    spans.push_back({t, t + 1});
  }
  const size_t last = m.plan.sequences.size() - 1;
  rows.push_back(Vector(last, kPrefix + m.plan.sequences[last].size()));
  spans.push_back({static_cast<uint32_t>(tokens), static_cast<uint32_t>(tokens)});
  ExpectRows(m.doc.multi_vector, rows, spans);
}

const std::vector<int32_t> kIds = {5, 6, 5, 100, 7, 6, 8};

TEST(TokenOutputMerger, EveryChunkingStrategyMergesByItsFormula) {
  for (Strategy strategy : {Strategy::kChunkMean, Strategy::kChunkWeightedMean, Strategy::kChunkMax,
                            Strategy::kChunkAll}) {
    for (uint32_t overlap : {0u, 1u}) {
      SCOPED_TRACE(::testing::Message() << StrategyName(strategy) << " overlap " << overlap);
      const Merged m = FoldAndMerge(kIds, strategy, 3, overlap, 8);
      ASSERT_GT(m.plan.sequences.size(), 2u);
      ExpectSparse(m.doc.sparse, ExpectedSparse(m, kIds, 0, kIds.size(), false));
      ExpectDocumentVectors(m, kIds.size(), false);
      const bool chunks = strategy == Strategy::kChunkAll;
      for (size_t c = 0; c < m.plan.chunks.size(); ++c) {
        const Span& range = m.plan.chunks[c];
        if (!chunks) {
          EXPECT_TRUE(m.doc.chunks[c].sparse.ids.empty());
          continue;
        }
        // A chunk is its own sequence: its sparse map, its content rows and its end row.
        std::map<int32_t, float> own;
        std::vector<std::vector<float>> rows;
        std::vector<Span> spans;
        for (uint32_t t = range.begin; t < range.end; ++t) {
          const float w = Weight(c, kPrefix + (t - range.begin));
          if (!kDropped.count(kIds[t]) && w > 0) own[kIds[t]] = std::max(own[kIds[t]], w);
          rows.push_back(Vector(c, kPrefix + (t - range.begin)));
          spans.push_back({t, t + 1});
        }
        rows.push_back(Vector(c, kPrefix + range.size()));
        spans.push_back({range.end, range.end});
        ExpectSparse(m.doc.chunks[c].sparse, own);
        ExpectRows(m.doc.chunks[c].multi_vector, rows, spans);
      }
    }
  }
}

TEST(TokenOutputMerger, LateChunkingTakesEachTokenFromItsWindow) {
  // Windows of 4 content tokens over 7: they overlap, and the planner picks each token's.
  const Merged m = FoldAndMerge(kIds, Strategy::kLateChunking, 2, 0, 4);
  ASSERT_GT(m.plan.sequences.size(), 1u);
  ASSERT_EQ(m.plan.token_window.size(), kIds.size());
  ExpectSparse(m.doc.sparse, ExpectedSparse(m, kIds, 0, kIds.size(), true));
  ExpectDocumentVectors(m, kIds.size(), true);
  for (size_t c = 0; c < m.plan.chunks.size(); ++c) {
    const Span& range = m.plan.chunks[c];
    ExpectSparse(m.doc.chunks[c].sparse, ExpectedSparse(m, kIds, range.begin, range.end, true));
    std::vector<std::vector<float>> rows;
    std::vector<Span> spans;
    for (uint32_t t = range.begin; t < range.end; ++t) {
      const auto [s, row] = Source(m.plan, t, true);
      rows.push_back(Vector(s, row));
      spans.push_back({t, t + 1});
    }
    ExpectRows(m.doc.chunks[c].multi_vector, rows, spans);  // no end row inside a document
  }
}

TEST(TokenOutputMerger, MaxVectorsAveragesRunsOfNeighboursAndRenormalises) {
  const Merged m = FoldAndMerge(kIds, Strategy::kChunkMean, 3, 0, 8, /*max_vectors=*/3);
  const Merged all = FoldAndMerge(kIds, Strategy::kChunkMean, 3, 0, 8);
  const size_t n = all.doc.multi_vector.count();  // 7 tokens and the end row
  ASSERT_EQ(n, 8u);
  std::vector<std::vector<float>> rows;
  std::vector<Span> spans;
  for (size_t g = 0; g < 3; ++g) {
    const size_t begin = g * n / 3, end = (g + 1) * n / 3;  // 0-2, 2-5, 5-8
    double sum[kDim] = {0, 0};
    for (size_t r = begin; r < end; ++r)
      for (size_t d = 0; d < kDim; ++d) sum[d] += all.doc.multi_vector.values[r * kDim + d];
    const double norm = std::hypot(sum[0], sum[1]);
    rows.push_back({static_cast<float>(sum[0] / norm), static_cast<float>(sum[1] / norm)});
    spans.push_back({all.doc.multi_vector.token_spans[begin].begin,
                     all.doc.multi_vector.token_spans[end - 1].end});
  }
  ExpectRows(m.doc.multi_vector, rows, spans);
  // Already few enough: unchanged.
  const MultiVectorResult same = PoolMultiVectors(all.doc.multi_vector, 8);
  EXPECT_EQ(same.values, all.doc.multi_vector.values);
}

}  // namespace
}  // namespace embedding::server
