#include "model_store/kernels/compute_device.h"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "model_store/kernels/torch_compat.h"

namespace embedding::model_store {
namespace {

absl::Status Missing(absl::string_view flag, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat("--device=", flag, ": ", what));
}

}  // namespace

DeviceMemory ReadDeviceMemory(const ComputeDevice& device) {
  return device.cuda ? DeviceMemoryOf(device.index) : DeviceMemory{};
}

std::string DevicePciBusId(const ComputeDevice& device) {
  return device.cuda ? PciBusIdOf(device.index) : std::string();
}

std::string ComputeDeviceName(const ComputeDevice& device) {
  return device.cuda ? absl::StrCat("cuda:", device.index) : "cpu";
}

absl::StatusOr<ComputeDevice> ResolveComputeDevice(std::string_view flag) {
  const absl::string_view text(flag.data(), flag.size());
  if (text == "cpu") return ComputeDevice{};
  const bool has_cuda = at::hasCUDA();
  const int visible = has_cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (text == "auto") {
    if (visible > 0) return ComputeDevice{true, 0};
    return ComputeDevice{};
  }
  int index = 0;
  absl::string_view rest = text;
  const bool named = absl::ConsumePrefix(&rest, "cuda");
  if (!named || (!rest.empty() && !(absl::ConsumePrefix(&rest, ":") &&
                                    absl::SimpleAtoi(rest, &index) && index >= 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", text, ": allowed cpu, cuda, cuda:N (N >= 0), auto"));
  }
  if (!has_cuda) {
    return Missing(text, absl::StrCat("this build's LibTorch (", TORCH_VERSION,
                                      ") has no CUDA; build against a CUDA LibTorch, or use "
                                      "--device=cpu"));
  }
  if (index >= visible) {
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    return Missing(text, absl::StrCat(visible, " CUDA device(s) visible (CUDA_VISIBLE_DEVICES=",
                                      mask ? mask : "unset", ")"));
  }
  return ComputeDevice{true, index};
}

}  // namespace embedding::model_store
