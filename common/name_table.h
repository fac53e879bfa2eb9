// One table spells each value of an enum, read both ways: a value's name (metric labels, logs,
// JSON) and the value a name spells (flags, files), with the refusal listing every name from the
// same rows. Written once, a name cannot drift between its printer and its parser.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace embedding {

template <typename Enum>
struct NamedValue {
  Enum value;
  const char* name;
};

// `value`'s name; `missing` for a value the table has no row for.
template <typename Enum, size_t N>
constexpr const char* NameOf(const NamedValue<Enum> (&table)[N], Enum value,
                             const char* missing = "?") {
  for (const auto& row : table)
    if (row.value == value) return row.name;
  return missing;
}

// The value spelled `name`, or nullopt.
template <typename Enum, size_t N>
std::optional<Enum> ValueNamed(const NamedValue<Enum> (&table)[N], absl::string_view name) {
  for (const auto& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

// Every name in the table's order, joined by `separator`: what a refusal lists as allowed.
template <typename Enum, size_t N>
std::string JoinedNames(const NamedValue<Enum> (&table)[N], absl::string_view separator = ", ") {
  return absl::StrJoin(table, separator, [](std::string* out, const NamedValue<Enum>& row) {
    out->append(row.name);
  });
}

}  // namespace embedding
