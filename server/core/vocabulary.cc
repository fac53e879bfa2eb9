#include "server/core/vocabulary.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace embedding::server {
namespace {

// In the order the API lists them: the .proto's (message_enums_test holds them to it).
constexpr std::pair<Strategy, const char*> kStrategyNames[] = {
    {Strategy::kReject, "reject"},
    {Strategy::kTruncate, "truncate"},
    {Strategy::kChunkMean, "chunk_mean"},
    {Strategy::kChunkWeightedMean, "chunk_weighted_mean"},
    {Strategy::kChunkMax, "chunk_max"},
    {Strategy::kChunkAll, "chunk_all"},
    {Strategy::kLateChunking, "late_chunking"},
};
constexpr std::pair<Output, const char*> kOutputNames[] = {
    {Output::kDense, "dense"}, {Output::kSparse, "sparse"}, {Output::kMultiVector, "multi_vector"}};

template <typename Enum, size_t N>
std::string NameIn(const std::pair<Enum, const char*> (&names)[N], Enum value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return absl::StrCat(static_cast<int>(value));  // not reached: every value has a row
}

}  // namespace

std::string StrategyName(Strategy strategy) { return NameIn(kStrategyNames, strategy); }

const std::vector<Strategy>& AllStrategies() {
  static const auto* all = [] {
    auto* strategies = new std::vector<Strategy>;
    for (const auto& [s, name] : kStrategyNames) strategies->push_back(s);
    return strategies;
  }();
  return *all;
}

absl::StatusOr<Strategy> ParseStrategyName(absl::string_view name, absl::string_view field) {
  std::vector<std::string> names;
  for (const auto& [s, spelled] : kStrategyNames) {
    if (name == spelled) return s;
    names.push_back(spelled);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name, "' is not a strategy; allowed ", absl::StrJoin(names, ", ")));
}

std::string OutputName(Output output) { return NameIn(kOutputNames, output); }

}  // namespace embedding::server
