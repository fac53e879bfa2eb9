// A validated Embed request's options, in server terms (no protobuf, no torch).
#pragma once

#include <cstdint>
#include <string>

namespace embedding::server {

enum class Strategy {
  kReject,
  kTruncate,
  kChunkMean,
  kChunkWeightedMean,
  kChunkMax,
  kChunkAll,
  kLateChunking,
};

const char* StrategyName(Strategy strategy);

struct EmbedParams {
  Strategy strategy = Strategy::kChunkMean;
  // TRUNCATE keeps the last window instead of the first.
  bool keep_end = false;
  // Content tokens per chunk and shared between neighbours; chunk_tokens <= window.
  uint32_t chunk_tokens = 0;
  uint32_t overlap_tokens = 0;
  bool normalize = true;
  // 0 keeps every dimension.
  uint32_t dimensions = 0;
  float temperature = 1.0f;
  // Prepended to every input before tokenisation.
  std::string prompt;
};

}  // namespace embedding::server
