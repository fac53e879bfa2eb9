// A GPU's utilisation as NVIDIA's management library (NVML) samples it, the figures nvidia-smi
// and DCGM show: LibTorch has no call for it. The library comes with the driver, not with the
// build, so it is opened at run time; a host without it exports no utilisation.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace embedding::server {

// Shares of NVML's last sample period, in [0, 1].
struct DeviceUtilization {
  double compute = 0;  // time in which a kernel ran
  double memory = 0;   // time in which device memory was read or written
};

class NvmlUtilization {
 public:
  // The driver's NVML for the device at `pci_bus_id` ("0000:03:00.0", as CUDA names it: NVML
  // counts devices in its own order, which CUDA_VISIBLE_DEVICES does not change).
  // UNAVAILABLE naming `library` when it cannot be opened or lacks an entry point, or NVML does
  // not start; NOT_FOUND naming the bus id when NVML has no such device.
  static absl::StatusOr<std::unique_ptr<NvmlUtilization>> Open(
      const std::string& pci_bus_id, const std::string& library = "libnvidia-ml.so.1");
  ~NvmlUtilization();  // shuts NVML down and closes the library
  NvmlUtilization(const NvmlUtilization&) = delete;
  NvmlUtilization& operator=(const NvmlUtilization&) = delete;

  // UNAVAILABLE with NVML's reason when the device does not answer.
  absl::StatusOr<DeviceUtilization> Read() const;

 private:
  struct Library;
  explicit NvmlUtilization(std::unique_ptr<Library> library);
  std::unique_ptr<Library> library_;
};

}  // namespace embedding::server
