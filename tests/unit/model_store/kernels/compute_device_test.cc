// --device against this build and machine: the forms it accepts, the CPU for cpu (and auto
// without a GPU), and a CUDA device that is not there refused naming the flag and what is
// missing.
#include "model_store/kernels/compute_device.h"

#include <ATen/Context.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/version.h>

namespace embedding::model_store {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int VisibleGpus() { return at::hasCUDA() ? static_cast<int>(torch::cuda::device_count()) : 0; }

TEST(ResolveComputeDevice, CpuIsTheCpuAndAutoAGpuWhereOneIsVisible) {
  const auto cpu = ResolveComputeDevice("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_FALSE(cpu->cuda);
  EXPECT_EQ(ComputeDeviceName(*cpu), "cpu");
  const auto automatic = ResolveComputeDevice("auto");
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_EQ(ComputeDeviceName(*automatic), VisibleGpus() > 0 ? "cuda:0" : "cpu");
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

// Refused at start: this build has no CUDA (Debian's LibTorch), or the device is not visible.
TEST(ResolveComputeDevice, ACudaDeviceThatIsNotThereIsRefusedNamingWhatIsMissing) {
  const int visible = VisibleGpus();
  for (const char* flag : {"cuda", "cuda:0", "cuda:7"}) {
    const int index = flag[4] == ':' ? flag[5] - '0' : 0;
    const auto device = ResolveComputeDevice(flag);
    if (index < visible) {
      ASSERT_TRUE(device.ok()) << flag << ": " << device.status();
      EXPECT_EQ(ComputeDeviceName(*device), std::string("cuda:") + std::to_string(index));
      continue;
    }
    EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition) << flag;
    EXPECT_THAT(std::string(device.status().message()),
                StartsWith(std::string("--device=") + flag + ": "));
    EXPECT_THAT(std::string(device.status().message()),
                HasSubstr(at::hasCUDA() ? "CUDA device(s) visible"
                                        : "LibTorch (" TORCH_VERSION ") has no CUDA"));
  }
}

}  // namespace
}  // namespace embedding::model_store
