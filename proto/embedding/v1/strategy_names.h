// The long-text strategies by name: "chunk_mean" for LONG_TEXT_STRATEGY_CHUNK_MEAN, the one
// spelling of the server's flags, its HTTP API and metric labels, and the client's flags.
// Read off the generated enum, so a strategy added to the .proto has a name at once.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "embedding/v1/embedding.pb.h"

namespace embedding::v1 {

// "chunk_mean" for LONG_TEXT_STRATEGY_CHUNK_MEAN.
std::string StrategyName(LongTextStrategy strategy);
// The strategy spelled `name` ; INVALID_ARGUMENT naming `field` and listing
// every name otherwise. UNSPECIFIED has no name.
absl::StatusOr<LongTextStrategy> ParseStrategyName(absl::string_view name, absl::string_view field);
// Every strategy a request may choose (all but UNSPECIFIED), in .proto order.
std::vector<LongTextStrategy> AllStrategies();

}  // namespace embedding::v1
