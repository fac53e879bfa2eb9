#include "server/core/batch_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace embedding::server {
namespace {

std::string Gib(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace

absl::StatusOr<int64_t> ResolveBatchTokens(int64_t requested, const DeviceBudget* device) {
  if (device == nullptr) return requested > 0 ? requested : kCpuBatchTokens;
  const auto kept_back =
      static_cast<int64_t>((1.0 - device->utilization) * static_cast<double>(device->total_bytes));
  const int64_t usable = std::max<int64_t>(0, device->available_bytes - kept_back);
  const int64_t fits = usable / std::max<int64_t>(1, device->bytes_per_token);
  const std::string figures =
      absl::StrCat(device->device, " has ", Gib(usable), " for forward passes (",
                   Gib(device->available_bytes), " available, ", Gib(kept_back), " kept back) at ",
                   device->bytes_per_token, " bytes per token");
  if (fits < device->window) {
    return absl::FailedPreconditionError(
        absl::StrCat("--gpu_memory_utilization=", device->utilization, ": ", figures,
                     ", which holds ", fits, " tokens, not one window of ", device->window,
                     "; raise it, free the device, or lower --max_input_length"));
  }
  if (requested > fits) {
    return absl::FailedPreconditionError(
        absl::StrCat("--max_batch_tokens=", requested, ": ", figures, "; at most ", fits));
  }
  if (requested > 0) return requested;
  return std::max(device->window, std::min(fits / 64 * 64, kMaxAutoDeviceBatchTokens));
}

}  // namespace embedding::server
