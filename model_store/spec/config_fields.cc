#include "model_store/spec/config_fields.h"

#include "absl/strings/str_cat.h"

namespace embedding::model_store {

absl::Status ReadPositive(const std::string& label, const nlohmann::json& json,
                          const std::string& field, bool required, int64_t* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) {
    if (required) return absl::DataLossError(absl::StrCat(label, ": missing field '", field, "'"));
    return absl::OkStatus();
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
      it->get<int64_t>() > kMaxConfigInteger) {
    return absl::DataLossError(absl::StrCat(
        label, ": field '", field, "' must be an integer in [1, ", kMaxConfigInteger, "]"));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadCount(const std::string& label, const nlohmann::json& json,
                       const std::string& field, int64_t* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > kMaxConfigInteger) {
    return absl::DataLossError(absl::StrCat(
        label, ": field '", field, "' must be an integer in [0, ", kMaxConfigInteger, "]"));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadBool(const std::string& label, const nlohmann::json& json,
                      const std::string& field, bool* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean())
    return absl::DataLossError(absl::StrCat(label, ": field '", field, "' must be true or false"));
  *out = it->get<bool>();
  return absl::OkStatus();
}

absl::Status ReadNumber(const std::string& label, const nlohmann::json& json,
                        const std::string& field, double low, double high, double* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number() || !(it->get<double>() > low && it->get<double>() <= high)) {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", field, "' must be a number in (", low, ", ", high, "]"));
  }
  *out = it->get<double>();
  return absl::OkStatus();
}

absl::Status ReadString(const std::string& label, const nlohmann::json& json,
                        const std::string& field, std::string* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string())
    return absl::DataLossError(absl::StrCat(label, ": field '", field, "' must be a string"));
  *out = it->get<std::string>();
  return absl::OkStatus();
}

}  // namespace embedding::model_store
