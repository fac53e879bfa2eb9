// Where a model's forward passes run (--device), resolved once at start against this build's
// LibTorch and the devices it sees. No torch types here: the server parses the flag through it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace embedding::model_store {

struct ComputeDevice {
  bool cuda = false;
  int index = 0;  // the CUDA device; 0 on the CPU
};

// What a device's memory holds, read when asked. All zero for the CPU (whose memory is the
// process's, which the resident-set metrics show) and in a build without CUDA.
struct DeviceMemory {
  int64_t allocated_bytes = 0;       // LibTorch's tensors on the device
  int64_t peak_allocated_bytes = 0;  // the most since the peak was last reset
  int64_t reserved_bytes = 0;        // LibTorch's allocator cache, those tensors included
  int64_t free_bytes = 0;            // the device's own free memory, beyond that cache
  int64_t total_bytes = 0;
  // What forward passes can still take: the free memory and the cache's unused part.
  int64_t available_bytes() const { return free_bytes + reserved_bytes - allocated_bytes; }
};

// `device`'s memory now; all zero for the CPU.
DeviceMemory ReadDeviceMemory(const ComputeDevice& device);

// A CUDA device's PCI bus id ("0000:03:00.0"), which names it to NVML whatever
// CUDA_VISIBLE_DEVICES renumbers; empty for the CPU and in a build without CUDA.
std::string DevicePciBusId(const ComputeDevice& device);

// "cpu" or "cuda:N": the name the start-up log, ModelInfo.device, TEI's /info and the
// embedding_model_info metric carry.
std::string ComputeDeviceName(const ComputeDevice& device);

// "cpu", "cuda" (device 0), "cuda:N" or "auto" (CUDA device 0 when this build's LibTorch has
// CUDA and one is visible, else the CPU). INVALID_ARGUMENT naming --device and the accepted
// forms for any other text; FAILED_PRECONDITION naming --device and what is missing when a
// CUDA device is asked for and this build's LibTorch has no CUDA or the device is not visible.
absl::StatusOr<ComputeDevice> ResolveComputeDevice(std::string_view flag);

}  // namespace embedding::model_store
