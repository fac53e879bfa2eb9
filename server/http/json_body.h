// A request body read as one JSON object (nlohmann-json), for the HTTP doors: nesting is
// bounded while parsing, so a nesting bomb stops before anything deeper is built.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/core/core_options.h"
#include "server/core/vocabulary.h"

namespace embedding::server {

// JSON nested deeper than this is refused before it is built.
inline constexpr int kMaxJsonDepth = 16;

// The longest string literal in a body, in bytes once its escapes are decoded, and the last
// object key seen before it (empty when none): one pass over the raw bytes, no allocation in
// proportion to them.
struct LongestJsonString {
  size_t bytes = 0;
  std::string key;
};
LongestJsonString FindLongestJsonString(std::string_view body);

// INVALID_ARGUMENT "body: ..." for JSON that does not parse, nests too deep or is not an
// object; "<key>: ..." (the key the string sits under, "body" for a key itself) for a string
// longer than one input may be (MaxInputBytes), refused before parsing: the parser holds
// several copies of a string at once (its growing token buffer, the value), 77 MiB at the peak
// for one 16 MiB text, and no field takes more than one input's bytes.
absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view body, const RequestLimits& limits);

// One field's value, typed; INVALID_ARGUMENT "param: must be ..., not <what it is>".
absl::StatusOr<std::string> ReadJsonString(const nlohmann::json& value, const char* param);
// An integer in [0, 4294967295].
absl::StatusOr<uint32_t> ReadJsonCount(const nlohmann::json& value, const char* param);
absl::StatusOr<bool> ReadJsonBool(const nlohmann::json& value, const char* param);
// A number as a float; beyond float's range an infinity of its sign (narrowing would be
// undefined), which the core's range checks then refuse by name.
absl::StatusOr<float> ReadJsonFloat(const nlohmann::json& value, const char* param);

// TempScale's two fields, spelled alike on every HTTP route: "temperature" (a number; the
// core checks its range) and "temperature_mode" ("fixed" | "auto"). When `key` is one of them,
// reads `value` into `*temperature` or `*mode` and returns true; otherwise false, touching
// nothing. INVALID_ARGUMENT naming the field for a value of the wrong type or name.
absl::StatusOr<bool> ReadTemperatureField(const std::string& key, const nlohmann::json& value,
                                          std::optional<float>* temperature,
                                          TemperatureMode* mode);

}  // namespace embedding::server
