#include "server/core/vocabulary.h"

#include "absl/strings/str_cat.h"
#include "common/name_table.h"

namespace embedding::server {
namespace {

// In the order the API lists them: the .proto's (message_enums_test holds them to it).
constexpr NamedValue<Strategy> kStrategyNames[] = {
    {Strategy::kReject, "reject"},
    {Strategy::kTruncate, "truncate"},
    {Strategy::kChunkMean, "chunk_mean"},
    {Strategy::kChunkWeightedMean, "chunk_weighted_mean"},
    {Strategy::kChunkMax, "chunk_max"},
    {Strategy::kChunkAll, "chunk_all"},
    {Strategy::kLateChunking, "late_chunking"},
};
constexpr NamedValue<Output> kOutputNames[] = {
    {Output::kDense, "dense"}, {Output::kSparse, "sparse"}, {Output::kMultiVector, "multi_vector"}};
constexpr NamedValue<InputType> kInputTypeNames[] = {
    {InputType::kSearchQuery, "search_query"},
    {InputType::kSearchDocument, "search_document"},
    {InputType::kClassification, "classification"},
    {InputType::kClustering, "clustering"},
};

}  // namespace

std::string StrategyName(Strategy strategy) { return NameOf(kStrategyNames, strategy); }

const std::vector<Strategy>& AllStrategies() {
  static const auto* all = [] {
    auto* strategies = new std::vector<Strategy>;
    for (const auto& row : kStrategyNames) strategies->push_back(row.value);
    return strategies;
  }();
  return *all;
}

absl::StatusOr<Strategy> ParseStrategyName(absl::string_view name, absl::string_view field) {
  if (const auto strategy = ValueNamed(kStrategyNames, name)) return *strategy;
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name, "' is not a strategy; allowed ", JoinedNames(kStrategyNames)));
}

std::string OutputName(Output output) { return NameOf(kOutputNames, output); }

std::string InputTypeName(InputType type) { return NameOf(kInputTypeNames, type); }

absl::StatusOr<InputType> ParseInputTypeName(absl::string_view name, absl::string_view field) {
  if (const auto type = ValueNamed(kInputTypeNames, name)) return *type;
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name, "' is not an input type; allowed ", JoinedNames(kInputTypeNames)));
}

}  // namespace embedding::server
