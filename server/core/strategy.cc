#include "server/core/strategy.h"

namespace embedding::server {

const StrategyTraits& TraitsOf(Strategy strategy) {
  // {plan, merge, needs_token_states, returns_chunks}
  static const StrategyTraits kReject{PlanRule::kReject, MergeRule::kMean};
  static const StrategyTraits kTruncate{PlanRule::kTruncate, MergeRule::kMean};
  static const StrategyTraits kMean{PlanRule::kChunks, MergeRule::kMean};
  static const StrategyTraits kWeighted{PlanRule::kChunks, MergeRule::kTokenWeightedMean};
  static const StrategyTraits kMax{PlanRule::kChunks, MergeRule::kMax};
  static const StrategyTraits kAll{PlanRule::kChunks, MergeRule::kMean, false, true};
  static const StrategyTraits kLate{PlanRule::kLateWindows, MergeRule::kMean, true, true};
  switch (strategy) {
    case v1::LONG_TEXT_STRATEGY_REJECT:
      return kReject;
    case v1::LONG_TEXT_STRATEGY_TRUNCATE:
      return kTruncate;
    case v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN:
      return kWeighted;
    case v1::LONG_TEXT_STRATEGY_CHUNK_MAX:
      return kMax;
    case v1::LONG_TEXT_STRATEGY_CHUNK_ALL:
      return kAll;
    case v1::LONG_TEXT_STRATEGY_LATE_CHUNKING:
      return kLate;
    default:
      return kMean;
  }
}

}  // namespace embedding::server
