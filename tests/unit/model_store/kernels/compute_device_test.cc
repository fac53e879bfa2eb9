// --device against this build: the forms it accepts, the CPU for cpu and auto (the encoder has
// no CUDA path in this version), and a CUDA device refused naming the flag and what is missing.
#include "model_store/kernels/compute_device.h"

#include <ATen/Context.h>
#include <torch/version.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace embedding::model_store {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ResolveComputeDevice, CpuAndAutoServeOnTheCpu) {
  for (const char* flag : {"cpu", "auto"}) {
    const auto device = ResolveComputeDevice(flag);
    ASSERT_TRUE(device.ok()) << flag << ": " << device.status();
    EXPECT_FALSE(device->cuda);
    EXPECT_EQ(ComputeDeviceName(*device), "cpu");
  }
  EXPECT_EQ(ComputeDeviceName(ComputeDevice{true, 3}), "cuda:3");
}

TEST(ResolveComputeDevice, OtherFormsAreRefusedListingTheAcceptedOnes) {
  for (const char* flag : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda0", "CPU", ""}) {
    const auto device = ResolveComputeDevice(flag);
    EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_EQ(device.status().message(),
              std::string("--device=") + flag + ": allowed cpu, cuda, cuda:N (N >= 0), auto");
  }
}

// Refused at start, never served from the CPU under a CUDA name: this build either has no CUDA
// (Debian's LibTorch), or the device is not visible, or the encoder cannot run there yet.
TEST(ResolveComputeDevice, ACudaDeviceIsRefusedNamingWhatIsMissing) {
  for (const char* flag : {"cuda", "cuda:0", "cuda:7"}) {
    const auto device = ResolveComputeDevice(flag);
    EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition) << flag;
    EXPECT_THAT(std::string(device.status().message()), StartsWith(std::string("--device=") + flag + ": "));
    if (!at::hasCUDA()) {
      EXPECT_THAT(std::string(device.status().message()),
                  HasSubstr("LibTorch (" TORCH_VERSION ") has no CUDA"));
    }
  }
}

}  // namespace
}  // namespace embedding::model_store
