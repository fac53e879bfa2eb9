#include "server/observability/device_utilization.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace embedding::server {
namespace {

// NVML's C interface (nvml.h), the entry points read here. Its header ships with CUDA, not
// with Debian, and the calls are a stable C ABI: 0 is NVML_SUCCESS.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlUtilizationRates {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent
};
using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using HandleByBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using UtilizationFn = NvmlReturn (*)(NvmlDevice, NvmlUtilizationRates*);
using ErrorStringFn = const char* (*)(NvmlReturn);

}  // namespace

struct NvmlUtilization::Library {
  void* handle = nullptr;
  bool initialised = false;
  ShutdownFn shutdown = nullptr;
  UtilizationFn utilization = nullptr;
  ErrorStringFn error_string = nullptr;
  NvmlDevice device = nullptr;

  std::string Reason(NvmlReturn code) const {
    const char* text = error_string != nullptr ? error_string(code) : nullptr;
    return text != nullptr ? std::string(text) : absl::StrCat("NVML error ", code);
  }
  ~Library() {
    if (initialised) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
};

NvmlUtilization::NvmlUtilization(std::unique_ptr<Library> library) : library_(std::move(library)) {}

NvmlUtilization::~NvmlUtilization() = default;

absl::StatusOr<std::unique_ptr<NvmlUtilization>> NvmlUtilization::Open(
    const std::string& pci_bus_id, const std::string& library) {
  auto lib = std::make_unique<Library>();
  lib->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(
        absl::StrCat(library, ": cannot be opened (", why != nullptr ? why : "unknown", ")"));
  }
  const auto init = reinterpret_cast<InitFn>(dlsym(lib->handle, "nvmlInit_v2"));
  const auto by_bus =
      reinterpret_cast<HandleByBusIdFn>(dlsym(lib->handle, "nvmlDeviceGetHandleByPciBusId_v2"));
  lib->shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib->handle, "nvmlShutdown"));
  lib->utilization =
      reinterpret_cast<UtilizationFn>(dlsym(lib->handle, "nvmlDeviceGetUtilizationRates"));
  lib->error_string = reinterpret_cast<ErrorStringFn>(dlsym(lib->handle, "nvmlErrorString"));
  if (init == nullptr || by_bus == nullptr || lib->shutdown == nullptr ||
      lib->utilization == nullptr) {
    return absl::UnavailableError(absl::StrCat(library, ": lacks NVML's entry points"));
  }
  if (const NvmlReturn code = init(); code != 0) {
    return absl::UnavailableError(
        absl::StrCat(library, ": nvmlInit_v2 failed: ", lib->Reason(code)));
  }
  lib->initialised = true;
  if (const NvmlReturn code = by_bus(pci_bus_id.c_str(), &lib->device); code != 0) {
    return absl::NotFoundError(
        absl::StrCat("NVML has no device at PCI bus id '", pci_bus_id, "': ", lib->Reason(code)));
  }
  return std::unique_ptr<NvmlUtilization>(new NvmlUtilization(std::move(lib)));
}

absl::StatusOr<DeviceUtilization> NvmlUtilization::Read() const {
  NvmlUtilizationRates rates{};
  if (const NvmlReturn code = library_->utilization(library_->device, &rates); code != 0) {
    return absl::UnavailableError(
        absl::StrCat("nvmlDeviceGetUtilizationRates: ", library_->Reason(code)));
  }
  return DeviceUtilization{rates.gpu / 100.0, rates.memory / 100.0};
}

}  // namespace embedding::server
