// What the request path produces for one Embed call, before a door turns it into its wire
// format and the metrics observe it. Plain structs; no protobuf, no torch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/span.h"

namespace embedding::server {

// Lexical weights by ascending vocabulary id.
struct SparseResult {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// `count` unit vectors of `dim`, row-major, each with the content tokens it stands for.
struct MultiVectorResult {
  uint32_t dim = 0;
  std::vector<float> values;
  std::vector<Span> token_spans;
  size_t count() const { return token_spans.size(); }
};

struct ChunkResult {
  std::vector<float> vector;
  Span tokens;  // content tokens of the document
  Span chars;   // code points of the input
  Span bytes;   // UTF-8 bytes of the input
  float temperature = 1.0f;  // of the sequence (window) it was encoded in
  SparseResult sparse;       // when asked
  MultiVectorResult multi_vector;  // when asked
};

struct DocumentResult {
  std::vector<float> vector;  // as returned: merged, normalised, truncated
  // Unit-norm, all dimensions: what the collapse metrics observe.
  std::vector<float> collapse_vector;
  std::vector<float> high_frequency_ratios;  // one per encoded sequence
  uint32_t token_count = 0;
  uint32_t chunk_count = 0;
  bool truncated = false;
  float temperature = 1.0f;  // the first sequence's (the only one's unless AUTO)
  std::vector<float> sequence_temperatures;  // one per encoded sequence, in order
  // Per sequence, the tau of the model's banded layers; empty when it has none.
  std::vector<float> sequence_local_temperatures;
  std::string length_bucket;
  std::vector<ChunkResult> chunks;  // CHUNK_ALL and LATE_CHUNKING only
  SparseResult sparse;              // when asked
  MultiVectorResult multi_vector;   // when asked
  // Row-major [sequence tokens x hidden], special tokens included; when asked.
  std::vector<float> token_states;
};

// The mean of a document's per-sequence high-frequency ratios (0 when there are none).
inline float MeanHighFrequencyRatio(const DocumentResult& doc) {
  double sum = 0;
  for (float r : doc.high_frequency_ratios) sum += r;
  return doc.high_frequency_ratios.empty()
             ? 0.0f
             : static_cast<float>(sum / doc.high_frequency_ratios.size());
}

struct EmbedResult {
  std::vector<DocumentResult> documents;
  uint64_t tokens = 0;
  uint64_t sequences = 0;
  uint64_t sequence_tokens = 0;
  double queue_seconds = 0;
  double tokenize_seconds = 0;
  double inference_seconds = 0;
  double total_seconds = 0;
};

}  // namespace embedding::server
