#include "server/http/json_body.h"

#include "absl/strings/str_cat.h"

namespace embedding::server {

absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view body) {
  using Json = nlohmann::json;
  struct TooDeep {};
  Json json;
  try {
    // The callback sees every value as it is parsed: a nesting bomb stops at the limit.
    json = Json::parse(body, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxJsonDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(
        absl::StrCat("body: JSON nests deeper than ", kMaxJsonDepth, " levels"));
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("body: not valid JSON: ", e.what()));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("body: must be a JSON object, not ", json.type_name()));
  }
  return json;
}

}  // namespace embedding::server
