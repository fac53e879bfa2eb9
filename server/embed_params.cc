#include "server/embed_params.h"

namespace embedding::server {

const char* StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kReject:
      return "reject";
    case Strategy::kTruncate:
      return "truncate";
    case Strategy::kChunkMean:
      return "chunk_mean";
    case Strategy::kChunkWeightedMean:
      return "chunk_weighted_mean";
    case Strategy::kChunkMax:
      return "chunk_max";
    case Strategy::kChunkAll:
      return "chunk_all";
    case Strategy::kLateChunking:
      return "late_chunking";
  }
  return "?";
}

}  // namespace embedding::server
