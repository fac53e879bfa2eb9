// Out of memory from a forward pass is RESOURCE_EXHAUSTED (the batcher retries smaller), as
// LibTorch's own allocator reports it; other failures stay INTERNAL.
#include "model_store/encoder/forward_failure.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <new>
#include <stdexcept>

#include "absl/strings/match.h"

namespace embedding::model_store {
namespace {

// A real allocation no machine here can serve (4 PiB); ASan's allocator maps it lazily
// instead of failing, so the sanitizer build skips this one (tests/CMakeLists.txt).
TEST(ForwardFailure, LibTorchsAllocatorFailureIsOutOfMemory) {
  try {
    torch::Tensor huge = torch::empty({int64_t{1} << 50}, torch::kFloat32);
    FAIL() << "a 4 PiB tensor was allocated";
  } catch (const std::exception& e) {
    const absl::Status status = ForwardFailure("encoder forward failed", e);
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), "out of memory: encoder forward failed: "))
        << status;
    EXPECT_NE(status.message().find("4503599627370496"), absl::string_view::npos) << status;
  }
}

TEST(ForwardFailure, BadAllocIsOutOfMemory) {
  EXPECT_EQ(ForwardFailure("f", std::bad_alloc()).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ForwardFailure, OtherFailuresAreInternalWithTheirText) {
  try {
    torch::Tensor a = torch::ones({2, 3});
    torch::Tensor b = torch::ones({4, 5});
    torch::Tensor c = torch::matmul(a, b);
    FAIL() << "mismatched shapes multiplied";
  } catch (const std::exception& e) {
    const absl::Status status = ForwardFailure("encoder forward failed", e);
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), "encoder forward failed: ")) << status;
    EXPECT_EQ(status.message().find("Exception raised from"), absl::string_view::npos)
        << "the backtrace stays out of the message";
  }
  EXPECT_EQ(ForwardFailure("f", std::runtime_error("dnnl: bad")).message(), "f: dnnl: bad");
}

}  // namespace
}  // namespace embedding::model_store
