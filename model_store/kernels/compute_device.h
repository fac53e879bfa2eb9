// Where a model's forward passes run (--device), resolved once at start against this build's
// LibTorch and the devices it sees. No torch types here: the server parses the flag through it.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace embedding::model_store {

struct ComputeDevice {
  bool cuda = false;
  int index = 0;  // the CUDA device; 0 on the CPU
};

// "cpu" or "cuda:N": the name the start-up log, ModelInfo.device, TEI's /info and the
// embedding_model_info metric carry.
std::string ComputeDeviceName(const ComputeDevice& device);

// "cpu", "cuda" (device 0), "cuda:N" or "auto" (CUDA device 0 when this build's LibTorch has
// CUDA and one is visible, else the CPU). INVALID_ARGUMENT naming --device and the accepted
// forms for any other text; FAILED_PRECONDITION naming --device and what is missing when a
// CUDA device is asked for and this build's LibTorch has no CUDA or the device is not visible.
absl::StatusOr<ComputeDevice> ResolveComputeDevice(std::string_view flag);

}  // namespace embedding::model_store
