#include "server/document_merger.h"

#include <algorithm>

#include "common/length_buckets.h"
#include "model_store/unicode_text.h"
#include "server/vector_math.h"

namespace embedding::server {
namespace {

// Late chunking: the mean of the chunk's contextual token states, each token taken from the
// window it is most central in.
std::vector<float> LateChunkVector(const EncodedDocument& doc, const Span& chunk, size_t dim,
                                   size_t prefix_tokens) {
  std::vector<double> sum(dim, 0.0);
  size_t rows = 0;
  auto add_row = [&](const std::vector<float>& hidden, size_t row) {
    for (size_t d = 0; d < dim; ++d) sum[d] += hidden[row * dim + d];
    ++rows;
  };
  if (chunk.size() == 0) {
    // An empty document: its one window holds only special tokens; pool all of them.
    const auto& hidden = doc.hidden[0];
    for (size_t row = 0; row < hidden.size() / dim; ++row) add_row(hidden, row);
  }
  for (uint32_t t = chunk.begin; t < chunk.end; ++t) {
    const uint32_t w = doc.plan.token_window[t];
    add_row(doc.hidden[w], prefix_tokens + (t - doc.plan.sequences[w].begin));
  }
  std::vector<float> out(dim);
  for (size_t d = 0; d < dim; ++d) out[d] = static_cast<float>(sum[d] / std::max<size_t>(rows, 1));
  return out;
}

}  // namespace

DocumentResult MergeDocument(const EncodedDocument& doc, const EmbedParams& params, size_t dim,
                             size_t prefix_tokens) {
  DocumentResult out;
  out.token_count = static_cast<uint32_t>(doc.tokens.ids.size());
  out.chunk_count = static_cast<uint32_t>(doc.plan.chunks.size());
  out.truncated = doc.plan.truncated;
  out.temperature = params.temperature;
  out.length_bucket = LengthBucketLabel(out.token_count);
  out.high_frequency_ratios = doc.hf_ratio;

  const bool late = params.strategy == v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  std::vector<std::vector<float>> chunk_vectors;
  std::vector<uint32_t> weights;
  for (size_t c = 0; c < doc.plan.chunks.size(); ++c) {
    chunk_vectors.push_back(late ? LateChunkVector(doc, doc.plan.chunks[c], dim, prefix_tokens)
                                 : doc.pooled[c]);
    if (params.normalize) L2Normalize(&chunk_vectors.back());
    weights.push_back(doc.plan.chunks[c].size());
  }
  std::vector<float> merged = MergeChunkVectors(params.strategy, chunk_vectors, weights);
  if (params.normalize) L2Normalize(&merged);
  out.collapse_vector = merged;
  L2Normalize(&out.collapse_vector);
  out.vector = TruncateDimensions(merged, params.dimensions, params.normalize);

  if (params.strategy == v1::LONG_TEXT_STRATEGY_CHUNK_ALL || late) {
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
