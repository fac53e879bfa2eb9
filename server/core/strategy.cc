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
    case Strategy::kReject:
      return kReject;
    case Strategy::kTruncate:
      return kTruncate;
    case Strategy::kChunkMean:
      return kMean;
    case Strategy::kChunkWeightedMean:
      return kWeighted;
    case Strategy::kChunkMax:
      return kMax;
    case Strategy::kChunkAll:
      return kAll;
    case Strategy::kLateChunking:
      return kLate;
  }
  return kMean;  // not reached: the switch names every strategy
}

}  // namespace embedding::server
