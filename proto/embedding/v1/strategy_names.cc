#include "embedding/v1/strategy_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace embedding::v1 {
namespace {

constexpr absl::string_view kPrefix = "LONG_TEXT_STRATEGY_";

}  // namespace

std::string StrategyName(LongTextStrategy strategy) {
  std::string name = LongTextStrategy_Name(strategy);
  if (absl::StartsWith(name, kPrefix)) name.erase(0, kPrefix.size());
  return absl::AsciiStrToLower(name);
}

std::vector<LongTextStrategy> AllStrategies() {
  std::vector<LongTextStrategy> all;
  const auto* descriptor = LongTextStrategy_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto value = static_cast<LongTextStrategy>(descriptor->value(i)->number());
    if (value != LONG_TEXT_STRATEGY_UNSPECIFIED) all.push_back(value);
  }
  return all;
}

absl::StatusOr<LongTextStrategy> ParseStrategyName(absl::string_view name,
                                                   absl::string_view field) {
  std::vector<std::string> names;
  for (LongTextStrategy s : AllStrategies()) {
    if (name == StrategyName(s)) return s;
    names.push_back(StrategyName(s));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name, "' is not a strategy; allowed ", absl::StrJoin(names, ", ")));
}

}  // namespace embedding::v1
