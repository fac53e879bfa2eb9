// Writes float32 tensors in the safetensors format (used by the demo-model writer and tests).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace embedding::model_store {

struct F32Tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Serialises `tensors` (sorted by name, packed back to back) into safetensors bytes.
std::string SerializeSafetensors(const std::map<std::string, F32Tensor>& tensors);

// Writes SerializeSafetensors(tensors) to `path`. INTERNAL when the file cannot be written.
absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, F32Tensor>& tensors);

}  // namespace embedding::model_store
