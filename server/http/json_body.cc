#include "server/http/json_body.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/core/request_validation.h"

namespace embedding::server {
namespace {

// UTF-8 bytes of the escape at body[i] (just after the backslash), and where it ends. A high
// surrogate counts the whole pair's 4 bytes, a low one none; a malformed escape counts 1 and is
// left for the parser to refuse.
std::pair<size_t, size_t> DecodedEscape(std::string_view body, size_t i) {
  if (body[i] != 'u' || i + 4 >= body.size()) return {1, i + 1};
  unsigned code = 0;
  for (size_t k = 1; k <= 4; ++k) {
    const char c = body[i + k];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return {1, i + 1};
    code = code * 16 + static_cast<unsigned>(digit);
  }
  const size_t bytes = code < 0x80                       ? 1
                       : code < 0x800                    ? 2
                       : code >= 0xD800 && code < 0xDC00 ? 4
                       : code >= 0xDC00 && code < 0xE000 ? 0
                                                         : 3;
  return {bytes, i + 5};
}

}  // namespace

LongestJsonString FindLongestJsonString(std::string_view body) {
  constexpr size_t kKeyBytes = 64;  // a key is quoted in messages: its first 64 bytes
  LongestJsonString longest;
  std::string_view key;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '"') continue;
    const size_t start = ++i;
    size_t bytes = 0;
    while (i < body.size() && body[i] != '"') {
      if (body[i] == '\\' && i + 1 < body.size()) {
        const auto [decoded, next] = DecodedEscape(body, i + 1);
        bytes += decoded;
        i = next;
      } else {
        ++bytes;
        ++i;
      }
    }
    const std::string_view literal = body.substr(start, i - start);
    size_t after = i + 1;
    while (after < body.size() && (body[after] == ' ' || body[after] == '\t' ||
                                   body[after] == '\n' || body[after] == '\r'))
      ++after;
    const bool is_key = after < body.size() && body[after] == ':';
    if (bytes > longest.bytes) longest = {bytes, is_key ? std::string() : std::string(key)};
    if (is_key) key = literal.substr(0, kKeyBytes);
  }
  return longest;
}

absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view body, const RequestLimits& limits) {
  using Json = nlohmann::json;
  const auto max_string_bytes = static_cast<size_t>(MaxInputBytes(limits));
  if (const LongestJsonString longest = FindLongestJsonString(body);
      longest.bytes > max_string_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(longest.key.empty() ? "body" : longest.key, ": a string of ", longest.bytes,
                     " bytes exceeds the bound; allowed [0, ", max_string_bytes, "] (",
                     kMaxBytesPerToken, " bytes for each token --max-tokens-per-document allows)"));
  }
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

namespace {

absl::Status NotA(const char* param, const char* what, const nlohmann::json& value) {
  return absl::InvalidArgumentError(absl::StrCat(param, ": must be ", what, ", not ",
                                                 value.dump(-1, ' ', false,
                                                            nlohmann::json::error_handler_t::replace)
                                                     .substr(0, 64)));
}

}  // namespace

absl::StatusOr<std::string> ReadJsonString(const nlohmann::json& value, const char* param) {
  if (!value.is_string())
    return absl::InvalidArgumentError(
        absl::StrCat(param, ": must be a string, not ", value.type_name()));
  return value.get<std::string>();
}

absl::StatusOr<uint32_t> ReadJsonCount(const nlohmann::json& value, const char* param) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() > std::numeric_limits<uint32_t>::max()) {
    return NotA(param, "an integer in [0, 4294967295]", value);
  }
  return static_cast<uint32_t>(value.get<int64_t>());
}

absl::StatusOr<bool> ReadJsonBool(const nlohmann::json& value, const char* param) {
  if (!value.is_boolean()) return NotA(param, "true or false", value);
  return value.get<bool>();
}

absl::StatusOr<float> ReadJsonFloat(const nlohmann::json& value, const char* param) {
  if (!value.is_number())
    return absl::InvalidArgumentError(
        absl::StrCat(param, ": must be a number, not ", value.type_name()));
  const double number = value.get<double>();
  return std::abs(number) <= std::numeric_limits<float>::max()
             ? static_cast<float>(number)
             : std::copysign(std::numeric_limits<float>::infinity(), number);
}

absl::StatusOr<bool> ReadTemperatureField(const std::string& key, const nlohmann::json& value,
                                          std::optional<float>* temperature,
                                          TemperatureMode* mode) {
  if (key == "temperature") {
    auto tau = ReadJsonFloat(value, "temperature");
    if (!tau.ok()) return tau.status();
    *temperature = *tau;
    return true;
  }
  if (key != "temperature_mode") return false;
  auto name = ReadJsonString(value, "temperature_mode");
  if (!name.ok()) return name.status();
  if (*name != "fixed" && *name != "auto")
    return absl::InvalidArgumentError("temperature_mode: must be \"fixed\" or \"auto\"");
  *mode = *name == "auto" ? TemperatureMode::kAuto : TemperatureMode::kFixed;
  return true;
}

}  // namespace embedding::server
