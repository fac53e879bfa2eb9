// A stand-in for the driver's libnvidia-ml.so.1 with NVML's C entry points, for a machine
// without a GPU: one device, at PCI bus id 0000:03:00.0, busy 37% of the time with memory
// traffic 12%. fake_nvml_sessions() counts nvmlInit_v2 calls not yet shut down.
#include <cstring>

namespace {
int sessions = 0;
int device = 0;  // its address is the handle
}  // namespace

extern "C" {

struct FakeNvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};

int nvmlInit_v2() {
  ++sessions;
  return 0;
}

int nvmlShutdown() {
  if (sessions == 0) return 1;  // NVML_ERROR_UNINITIALIZED
  --sessions;
  return 0;
}

const char* nvmlErrorString(int code) { return code == 6 ? "Not Found" : "Unknown Error"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** handle) {
  if (sessions == 0) return 1;
  if (std::strcmp(bus_id, "0000:03:00.0") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *handle = &device;
  return 0;
}

int nvmlDeviceGetUtilizationRates(void* handle, FakeNvmlUtilization* rates) {
  if (sessions == 0 || handle != &device) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  rates->gpu = 37;
  rates->memory = 12;
  return 0;
}

int fake_nvml_sessions() { return sessions; }

}  // extern "C"
