// A forward pass's token budget (--max_batch_tokens) on the device its model runs on: a fixed
// count on the CPU, and on a GPU what its memory holds at the model's measured cost per token.
// Plain numbers in and out, so the policy is tested without a GPU.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace embedding::server {

// Auto on the CPU. The encoder's row buckets are laid out for batches up to this size (64-row
// steps: a mixed corpus's batches fall into 32 shapes, each kernel built once), and a BERT-base
// pass of 2,048 tokens takes about 2.5 s in fp32 on 2 cores of a Xeon (forward_bench, 8 x 512),
// so a batch holds the requests queued behind it for no longer than that.
inline constexpr int64_t kCpuBatchTokens = 2048;
// Auto on a GPU stops here: 128 x 512, the batch of PyTorch's BERT-base figure on an H200
// (tests/gpu/pytorch_peer_bench.py). A larger pass delays the requests queued behind it.
inline constexpr int64_t kMaxAutoDeviceBatchTokens = 65536;

// A GPU, measured with the model's weights on it.
struct DeviceBudget {
  int64_t available_bytes = 0;  // model_store::DeviceMemory::available_bytes()
  int64_t total_bytes = 0;
  int64_t bytes_per_token = 0;  // model_store::Model::device_bytes_per_token()
  double utilization = 0.9;     // --gpu_memory_utilization: the share of the total to use
  int64_t window = 0;           // the model's longest sequence: one must always fit
  const char* device = "cuda";  // its name, for the errors
};

// `requested` (0: auto) on the CPU (`device` null): itself, or kCpuBatchTokens. On a GPU, the
// tokens its memory holds: what is available, less the share of the total kept back (1 -
// utilization: other processes, the allocator's fragmentation), at bytes_per_token. Auto takes
// that, in steps of 64 and at most kMaxAutoDeviceBatchTokens; a request above it is refused.
// FAILED_PRECONDITION naming --max_batch_tokens with the most that fits, or
// --gpu_memory_utilization when not one window fits.
absl::StatusOr<int64_t> ResolveBatchTokens(int64_t requested, const DeviceBudget* device);

}  // namespace embedding::server
