// Typed reads of config.json fields, each error naming the file and the field: shared by the
// generic sizes (encoder_config.cc) and each family's own keys (family_configs.cc).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

// Sizes and ids in a config stay below 2^31, so arithmetic on them (4 x hidden, the padding
// offset, weight sizes) cannot overflow int64.
inline constexpr int64_t kMaxConfigInteger = std::numeric_limits<int32_t>::max();

// Each reads `field` into `out` when present and not null, and leaves `out` alone otherwise
// (ReadPositive with `required` says DATA_LOSS instead).
// An integer in [1, kMaxConfigInteger].
absl::Status ReadPositive(const std::string& label, const nlohmann::json& json,
                          const std::string& field, bool required, int64_t* out);
// An integer in [0, kMaxConfigInteger].
absl::Status ReadCount(const std::string& label, const nlohmann::json& json,
                       const std::string& field, int64_t* out);
absl::Status ReadBool(const std::string& label, const nlohmann::json& json,
                      const std::string& field, bool* out);
// A number in (low, high].
absl::Status ReadNumber(const std::string& label, const nlohmann::json& json,
                        const std::string& field, double low, double high, double* out);
absl::Status ReadString(const std::string& label, const nlohmann::json& json,
                        const std::string& field, std::string* out);

}  // namespace embedding::model_store
