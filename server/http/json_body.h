// A request body read as one JSON object (nlohmann-json), for the HTTP doors: nesting is
// bounded while parsing, so a nesting bomb stops before anything deeper is built.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace embedding::server {

// JSON nested deeper than this is refused before it is built.
inline constexpr int kMaxJsonDepth = 16;

// INVALID_ARGUMENT "body: ..." for JSON that does not parse, nests too deep or is not an
// object.
absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view body);

}  // namespace embedding::server
