// GPU utilisation through NVML's C interface, against a stand-in library
// (tests/testing/fake_nvml.cc): the figures it gives, the device it is asked for by bus id,
// the errors naming what failed, and the NVML session closed when the reader goes.
#include "server/observability/device_utilization.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/observability/metrics.h"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

// The stand-in's open NVML sessions, read through its own handle.
int OpenSessions() {
  void* handle = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return 0;  // not loaded: nothing open
  const auto sessions = reinterpret_cast<int (*)()>(dlsym(handle, "fake_nvml_sessions"));
  const int open = sessions != nullptr ? sessions() : -1;
  dlclose(handle);
  return open;
}

TEST(NvmlUtilization, ReadsTheDeviceAtItsBusIdAndClosesItsSession) {
  {
    auto nvml = NvmlUtilization::Open("0000:03:00.0", FAKE_NVML_PATH);
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    EXPECT_EQ(OpenSessions(), 1);
    auto now = (*nvml)->Read();
    ASSERT_TRUE(now.ok()) << now.status();
    EXPECT_DOUBLE_EQ(now->compute, 0.37);
    EXPECT_DOUBLE_EQ(now->memory, 0.12);
  }
  EXPECT_EQ(OpenSessions(), 0);
}

TEST(NvmlUtilization, RefusalsNameTheDeviceOrTheLibrary) {
  auto elsewhere = NvmlUtilization::Open("0000:81:00.0", FAKE_NVML_PATH);
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(elsewhere.status().message(), HasSubstr("PCI bus id '0000:81:00.0': Not Found"));
  EXPECT_EQ(OpenSessions(), 0);  // the failed open shut its session

  auto missing = NvmlUtilization::Open("0000:03:00.0", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("/nonexistent/libnvidia-ml.so.1: cannot be opened"));

  // A library without NVML's entry points (libm) is refused, not called.
  auto other = NvmlUtilization::Open("0000:03:00.0", "libm.so.6");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(other.status().message(), HasSubstr("libm.so.6: lacks NVML's entry points"));
}

// The metric follows the source at each scrape; a scrape it fails keeps the last figures.
TEST(NvmlUtilization, TheMetricFollowsEachScrape) {
  Metrics metrics(8);
  EXPECT_THAT(metrics.Render(), ::testing::Not(HasSubstr("embedding_device_utilization_ratio{")));
  auto nvml = NvmlUtilization::Open("0000:03:00.0", FAKE_NVML_PATH);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  bool answers = true;
  metrics.SetDeviceUtilizationSource("cuda:0", [&]() -> absl::StatusOr<DeviceUtilization> {
    if (!answers) return absl::UnavailableError("lost");
    return (*nvml)->Read();
  });
  for (int scrape = 0; scrape < 2; ++scrape) {
    const std::string text = metrics.Render();
    EXPECT_THAT(text, HasSubstr("embedding_device_utilization_ratio{device=\"cuda:0\",kind="
                                "\"compute\"} 0.37"));
    EXPECT_THAT(text, HasSubstr("embedding_device_utilization_ratio{device=\"cuda:0\",kind="
                                "\"memory\"} 0.12"));
    answers = false;
  }
}

}  // namespace
}  // namespace embedding::server
