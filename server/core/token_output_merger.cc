#include "server/core/token_output_merger.h"

#include <algorithm>
#include <cmath>

#include "server/core/strategy.h"
#include "server/core/token_pooling.h"

namespace embedding::server {
namespace {

void MaxInto(std::map<int32_t, float>* into, int32_t id, float weight) {
  if (weight <= 0) return;
  auto [it, inserted] = into->emplace(id, weight);
  if (!inserted) it->second = std::max(it->second, weight);
}

// By ascending id; with `top_k` > 0 only the k largest weights (ties: the lower id).
SparseResult ToSparse(const std::map<int32_t, float>& weights, uint32_t top_k) {
  float floor = 0;  // the k-th largest weight: those above it stay, and the first at it
  size_t at_floor = 0;
  if (top_k > 0 && weights.size() > top_k) {
    std::vector<float> sorted;
    for (const auto& entry : weights) sorted.push_back(entry.second);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                     std::greater<float>());
    floor = sorted[top_k - 1];
    at_floor = top_k - static_cast<size_t>(std::count_if(
                           sorted.begin(), sorted.end(), [floor](float w) { return w > floor; }));
  }
  SparseResult out;
  for (const auto& [id, weight] : weights) {
    if (weight < floor) continue;
    if (weight == floor && floor > 0) {
      if (at_floor == 0) continue;
      --at_floor;
    }
    out.ids.push_back(id);
    out.weights.push_back(weight);
  }
  return out;
}

// Late chunking: the max per id over content tokens [begin, end), each from its own window.
std::map<int32_t, float> LateSparse(const TokenOutputState& state, const std::vector<int32_t>& ids,
                                    uint32_t begin, uint32_t end,
                                    const std::set<int32_t>& dropped) {
  std::map<int32_t, float> out;
  for (uint32_t t = begin; t < end; ++t) {
    if (dropped.count(ids[t]) == 0) MaxInto(&out, ids[t], state.token_weights[t]);
  }
  return out;
}

void AppendRow(MultiVectorResult* out, const float* row, size_t dim, Span span) {
  out->values.insert(out->values.end(), row, row + dim);
  out->token_spans.push_back(span);
}

// A chunk encoded as its own sequence: its content rows, then its end token's.
MultiVectorResult SequenceVectors(const std::vector<float>& rows, const Span& range, size_t dim) {
  MultiVectorResult out;
  out.dim = static_cast<uint32_t>(dim);
  const size_t count = rows.size() / dim;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t t = range.begin + static_cast<uint32_t>(std::min<size_t>(i, range.size()));
    AppendRow(&out, rows.data() + i * dim, dim,
              i < range.size() ? Span{t, t + 1} : Span{range.end, range.end});
  }
  return out;
}

// Without a document's content rows whose token is in the late-interaction model's skiplist.
MultiVectorResult WithoutSkipped(MultiVectorResult in, const std::vector<int32_t>& ids,
                                 const LateRows& rows) {
  if (rows.model == nullptr || rows.query) return in;
  MultiVectorResult out;
  out.dim = in.dim;
  for (size_t r = 0; r < in.count(); ++r) {
    const Span& span = in.token_spans[r];
    if (span.size() == 1 && rows.model->Skipped(ids[span.begin])) continue;
    AppendRow(&out, in.values.data() + r * in.dim, in.dim, span);
  }
  return out;
}

// Late chunking: content tokens [begin, end), each from its own window, appended to `out`.
void AppendLateVectors(const TokenOutputState& state, uint32_t begin, uint32_t end, size_t dim,
                       MultiVectorResult* out) {
  for (uint32_t t = begin; t < end; ++t)
    AppendRow(out, state.token_vectors.data() + t * dim, dim, Span{t, t + 1});
}

MultiVectorResult LateVectors(const TokenOutputState& state, uint32_t begin, uint32_t end,
                              size_t dim) {
  MultiVectorResult out;
  out.dim = static_cast<uint32_t>(dim);
  AppendLateVectors(state, begin, end, dim, &out);
  return out;
}

}  // namespace

std::set<int32_t> SparseDroppedIds(const model_store::Model& model) {
  std::set<int32_t> ids(model.special_prefix().begin(), model.special_prefix().end());
  ids.insert(model.special_suffix().begin(), model.special_suffix().end());
  ids.insert(model.tokenizer().config().pad_id);
  if (model.tokenizer().config().unk_id >= 0) ids.insert(model.tokenizer().config().unk_id);
  return ids;
}

void PrepareTokenOutputs(TokenOutputState* state, const ChunkPlan& plan, size_t tokens, bool late,
                         const EmbedParams& params, size_t dim) {
  if (late) {
    if (params.sparse) state->token_weights.assign(tokens, 0.0f);
    if (params.multi_vector) state->token_vectors.assign(tokens * dim, 0.0f);
  } else {
    state->sequence_sparse.resize(plan.sequences.size());
    state->sequence_vectors.resize(plan.sequences.size());
  }
}

void FoldTokenOutputs(TokenOutputState* state, const ChunkPlan& plan,
                      const std::vector<int32_t>& ids, size_t s, bool late, size_t prefix,
                      bool keep_prefix, const std::set<int32_t>& dropped,
                      const std::vector<float>& weights, const std::vector<float>& vectors,
                      size_t dim) {
  const Span& range = plan.sequences[s];
  if (keep_prefix && s == 0 && !vectors.empty())
    state->prefix_vectors.assign(vectors.begin(), vectors.begin() + prefix * dim);
  if (!late) {
    for (size_t i = 0; i < range.size() && !weights.empty(); ++i) {
      const int32_t id = ids[range.begin + i];
      if (dropped.count(id) == 0) MaxInto(&state->sequence_sparse[s], id, weights[prefix + i]);
    }
    if (!vectors.empty())
      state->sequence_vectors[s].assign(vectors.begin() + prefix * dim, vectors.end());
    return;
  }
  for (uint32_t t = range.begin; t < range.end; ++t) {
    if (plan.token_window[t] != s) continue;
    const size_t row = prefix + (t - range.begin);
    if (!weights.empty()) state->token_weights[t] = weights[row];
    if (!vectors.empty()) {
      std::copy(vectors.begin() + row * dim, vectors.begin() + (row + 1) * dim,
                state->token_vectors.begin() + t * dim);
    }
  }
  if (s + 1 == plan.sequences.size() && !vectors.empty())
    state->end_vectors.assign(vectors.begin() + (prefix + range.size()) * dim, vectors.end());
}

void FoldVocabularySparse(TokenOutputState* state, size_t s,
                          const model_store::SparseVector& sparse) {
  for (size_t i = 0; i < sparse.ids.size(); ++i)
    MaxInto(&state->sequence_sparse[s], sparse.ids[i], sparse.weights[i]);
}

void MergeTokenOutputs(const TokenOutputState& state, const ChunkPlan& plan,
                       const std::vector<int32_t>& ids, bool late, const std::set<int32_t>& dropped,
                       const LateRows& late_rows, const EmbedParams& params, size_t dim,
                       DocumentResult* doc) {
  const auto tokens = static_cast<uint32_t>(ids.size());
  if (params.sparse) {
    std::map<int32_t, float> merged;
    if (late) {
      merged = LateSparse(state, ids, 0, tokens, dropped);
    } else {
      for (const auto& sequence : state.sequence_sparse)
        for (const auto& [id, weight] : sequence) MaxInto(&merged, id, weight);
    }
    doc->sparse = ToSparse(merged, params.sparse_top_k);
  }
  if (params.multi_vector) {
    MultiVectorResult merged;
    merged.dim = static_cast<uint32_t>(dim);
    for (size_t r = 0; r * dim < state.prefix_vectors.size(); ++r)
      AppendRow(&merged, state.prefix_vectors.data() + r * dim, dim, Span{0, 0});
    if (late) {
      AppendLateVectors(state, 0, tokens, dim, &merged);
      for (size_t r = 0; r * dim < state.end_vectors.size(); ++r)
        AppendRow(&merged, state.end_vectors.data() + r * dim, dim, Span{tokens, tokens});
    } else {
      uint32_t covered = 0;  // content tokens before this are in already
      for (size_t s = 0; s < plan.sequences.size(); ++s) {
        const Span& range = plan.sequences[s];
        const MultiVectorResult own = SequenceVectors(state.sequence_vectors[s], range, dim);
        const bool last = s + 1 == plan.sequences.size();
        for (size_t r = 0; r < own.count(); ++r) {
          const bool content = r < range.size();  // then the end token's rows
          if (content ? own.token_spans[r].begin < covered : !last) continue;
          AppendRow(&merged, own.values.data() + r * dim, dim, own.token_spans[r]);
        }
        covered = std::max(covered, range.end);
      }
    }
    // PyLate's pooling keeps the first vector ([CLS]) of a late-interaction document.
    doc->multi_vector = PoolMultiVectors(
        PoolTokens(WithoutSkipped(std::move(merged), ids, late_rows), params.pool_factor,
                   late_rows.model != nullptr ? 1 : 0),
        params.max_vectors);
  }
  if (!params.traits.returns_chunks) return;
  for (size_t c = 0; c < doc->chunks.size() && c < plan.chunks.size(); ++c) {
    const Span& range = plan.chunks[c];
    ChunkResult& chunk = doc->chunks[c];
    if (params.sparse) {
      chunk.sparse = ToSparse(late ? LateSparse(state, ids, range.begin, range.end, dropped)
                                   : state.sequence_sparse[c],
                              params.sparse_top_k);
    }
    if (params.multi_vector) {
      chunk.multi_vector = PoolMultiVectors(
          PoolTokens(WithoutSkipped(late ? LateVectors(state, range.begin, range.end, dim)
                                         : SequenceVectors(state.sequence_vectors[c], range, dim),
                                    ids, late_rows),
                     params.pool_factor, 0),
          params.max_vectors);
    }
  }
}

MultiVectorResult PoolMultiVectors(MultiVectorResult in, uint32_t max_vectors) {
  const size_t n = in.count();
  if (max_vectors == 0 || n <= max_vectors) return in;
  MultiVectorResult out;
  out.dim = in.dim;
  const size_t dim = in.dim;
  for (size_t g = 0; g < max_vectors; ++g) {
    const size_t begin = g * n / max_vectors, end = (g + 1) * n / max_vectors;
    std::vector<double> sum(dim, 0.0);
    for (size_t r = begin; r < end; ++r)
      for (size_t d = 0; d < dim; ++d) sum[d] += in.values[r * dim + d];
    double norm = 0;
    for (double v : sum) norm += v * v;
    norm = std::max(std::sqrt(norm), 1e-12);
    for (double v : sum) out.values.push_back(static_cast<float>(v / norm));
    out.token_spans.push_back(Span{in.token_spans[begin].begin, in.token_spans[end - 1].end});
  }
  return out;
}

}  // namespace embedding::server
