#include "server/core/document_merger.h"

#include <algorithm>

#include "common/length_buckets.h"
#include "model_store/text/unicode_text.h"
#include "server/core/vector_math.h"

namespace embedding::server {
namespace {

// Late chunking: the mean of the chunk's contextual token states.
std::vector<float> LateChunkVector(const EncodedDocument& doc, size_t chunk, size_t dim) {
  const double rows = std::max<uint32_t>(doc.chunk_rows[chunk], 1);
  std::vector<float> out(dim);
  for (size_t d = 0; d < dim; ++d) out[d] = static_cast<float>(doc.chunk_sums[chunk][d] / rows);
  return out;
}

}  // namespace

void PrepareSlots(EncodedDocument* doc, bool late_chunking, size_t dim) {
  const size_t sequences = doc->plan.sequences.size();
  doc->hf_ratio.assign(sequences, 0.0f);
  if (late_chunking) {
    doc->chunk_sums.assign(doc->plan.chunks.size(), std::vector<double>(dim, 0.0));
    doc->chunk_rows.assign(doc->plan.chunks.size(), 0);
  } else {
    doc->pooled.resize(sequences);
  }
}

void AddLateChunkWindow(EncodedDocument* doc, size_t window, const std::vector<float>& states,
                        size_t dim, size_t prefix_tokens) {
  const Span& owned = doc->plan.sequences[window];
  auto add_row = [&](size_t chunk, size_t row) {
    std::vector<double>& sum = doc->chunk_sums[chunk];
    const float* values = states.data() + row * dim;
    for (size_t d = 0; d < dim; ++d) sum[d] += values[d];
    ++doc->chunk_rows[chunk];
  };
  for (size_t c = 0; c < doc->plan.chunks.size(); ++c) {
    const Span& chunk = doc->plan.chunks[c];
    if (chunk.size() == 0) {
      // An empty document: its one window holds only special tokens; pool all of them.
      for (size_t row = 0; row < states.size() / dim; ++row) add_row(c, row);
      continue;
    }
    const uint32_t begin = std::max(chunk.begin, owned.begin);
    const uint32_t end = std::min(chunk.end, owned.end);
    for (uint32_t t = begin; t < end; ++t) {
      if (doc->plan.token_window[t] == window) add_row(c, prefix_tokens + (t - owned.begin));
    }
  }
}

namespace {

// The tau of the sequence chunk `c` was encoded in; under late chunking, of the window its
// first token takes its states from.
float ChunkTemperature(const EncodedDocument& doc, size_t c, bool late, float fallback) {
  if (doc.sequence_tau.empty()) return fallback;
  const Span& range = doc.plan.chunks[c];
  size_t sequence = c;
  if (late) sequence = range.size() > 0 ? doc.plan.token_window[range.begin] : 0;
  return doc.sequence_tau[std::min(sequence, doc.sequence_tau.size() - 1)];
}

}  // namespace

std::vector<float> SequenceTemperatures(const ChunkPlan& plan, const EmbedParams& params,
                                        const model_store::TempScaleSchedule& schedule) {
  std::vector<float> taus;
  taus.reserve(plan.sequences.size());
  for (const Span& range : plan.sequences)
    taus.push_back(params.auto_temperature ? schedule.TauFor(range.size()) : params.temperature);
  return taus;
}

std::vector<float> LocalSequenceTemperatures(const ChunkPlan& plan, const EmbedParams& params,
                                             const model_store::TempScaleSchedule& schedule,
                                             int64_t local_keys) {
  std::vector<float> taus;
  if (local_keys <= 0) return taus;
  for (const Span& range : plan.sequences) {
    const int64_t seen = std::min<int64_t>(range.size(), local_keys);
    taus.push_back(params.auto_temperature ? schedule.TauFor(seen) : params.temperature);
  }
  return taus;
}

DocumentResult MergeDocument(const EncodedDocument& doc, const EmbedParams& params, size_t dim,
                             const PooledProjection& project) {
  DocumentResult out;
  out.token_count = static_cast<uint32_t>(doc.tokens.ids.size());
  out.chunk_count = static_cast<uint32_t>(doc.plan.chunks.size());
  out.truncated = doc.plan.truncated;
  out.temperature = doc.sequence_tau.empty() ? params.temperature : doc.sequence_tau.front();
  out.sequence_temperatures = doc.sequence_tau;
  out.sequence_local_temperatures = doc.sequence_local_tau;
  out.length_bucket = LengthBucketLabel(out.token_count);
  out.high_frequency_ratios = doc.hf_ratio;

  const StrategyTraits& traits = params.traits;
  const bool late = traits.needs_token_states;
  std::vector<std::vector<float>> chunk_vectors;
  std::vector<uint32_t> weights;
  for (size_t c = 0; c < doc.plan.chunks.size(); ++c) {
    chunk_vectors.push_back(late ? LateChunkVector(doc, c, dim) : doc.pooled[c]);
    if (late && project) project(&chunk_vectors.back());
    if (params.normalize) L2Normalize(&chunk_vectors.back());
    weights.push_back(doc.plan.chunks[c].size());
  }
  std::vector<float> merged = MergeChunkVectors(traits.merge, chunk_vectors, weights);
  if (params.normalize) L2Normalize(&merged);
  out.collapse_vector = merged;
  L2Normalize(&out.collapse_vector);
  out.vector = TruncateDimensions(merged, params.dimensions, params.normalize);

  if (traits.returns_chunks) {
    const std::string_view input = std::string_view(doc.text).substr(doc.prompt_bytes);
    model_store::CodePointIndex chars(input);
    auto to_input = [&](uint32_t byte) {
      return byte > doc.prompt_bytes ? byte - doc.prompt_bytes : 0;
    };
    for (size_t c = 0; c < doc.plan.chunks.size(); ++c) {
      const Span& range = doc.plan.chunks[c];
      ChunkResult chunk;
      chunk.vector = TruncateDimensions(chunk_vectors[c], params.dimensions, params.normalize);
      chunk.tokens = range;
      chunk.temperature = ChunkTemperature(doc, c, late, params.temperature);
      if (range.size() > 0) {
        chunk.bytes = {to_input(doc.tokens.spans[range.begin].begin),
                       to_input(doc.tokens.spans[range.end - 1].end)};
        chunk.chars = {chars.CharsBefore(chunk.bytes.begin), chars.CharsBefore(chunk.bytes.end)};
      }
      out.chunks.push_back(std::move(chunk));
    }
  }
  return out;
}

}  // namespace embedding::server
