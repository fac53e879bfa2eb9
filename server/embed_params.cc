#include "server/embed_params.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace embedding::server {
namespace {

constexpr absl::string_view kPrefix = "LONG_TEXT_STRATEGY_";

}  // namespace

std::string StrategyName(Strategy strategy) {
  std::string name = v1::LongTextStrategy_Name(strategy);
  if (absl::StartsWith(name, kPrefix)) name.erase(0, kPrefix.size());
  return absl::AsciiStrToLower(name);
}

std::vector<Strategy> AllStrategies() {
  std::vector<Strategy> all;
  const auto* descriptor = v1::LongTextStrategy_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto value = static_cast<Strategy>(descriptor->value(i)->number());
    if (value != v1::LONG_TEXT_STRATEGY_UNSPECIFIED) all.push_back(value);
  }
  return all;
}

absl::StatusOr<Strategy> ParseStrategyName(absl::string_view name, absl::string_view field) {
  std::vector<std::string> names;
  for (Strategy s : AllStrategies()) {
    if (name == StrategyName(s)) return s;
    names.push_back(StrategyName(s));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name, "' is not a strategy; allowed ", absl::StrJoin(names, ", ")));
}

}  // namespace embedding::server
