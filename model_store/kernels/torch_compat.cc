#include "model_store/kernels/torch_compat.h"

#include <ATen/Context.h>
#include <torch/version.h>

#include <cmath>

// Defined by CMake where the LibTorch found has CUDA.
#ifdef EMBEDDING_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#define EMBEDDING_CUDA 1
#endif

namespace embedding::model_store {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define EMBEDDING_FUSED_ATTENTION 1
#endif

torch::Tensor ScaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double scale, bool causal,
                                        const torch::Tensor& mask) {
#ifdef EMBEDDING_FUSED_ATTENTION
  // The mask and the scale convert to whichever optional this version's signature takes
  // (c10's before 2.3, std's after).
  if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, scale);
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal,
                                          scale);
#else
  torch::Tensor scores = torch::matmul(q * scale, k.transpose(-1, -2));
  if (causal) {
    const int64_t length = q.size(-2);
    scores.masked_fill_(torch::ones({length, length}, q.options().dtype(torch::kBool)).triu_(1),
                        -INFINITY);
  }
  if (mask.defined()) scores.masked_fill_(mask.logical_not(), -INFINITY);
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

void KeepFp32Exact() {
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

DeviceMemory DeviceMemoryOf(int index) {
  DeviceMemory memory;
#ifdef EMBEDDING_CUDA
  const auto device = static_cast<c10::DeviceIndex>(index);
  // Entry 0 of each statistic is the aggregate over pool kinds in every 2.x version.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  memory.allocated_bytes = stats.allocated_bytes[0].current;
  memory.peak_allocated_bytes = stats.allocated_bytes[0].peak;
  memory.reserved_bytes = stats.reserved_bytes[0].current;
  c10::cuda::CUDAGuard guard(device);
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
    memory.free_bytes = static_cast<int64_t>(free);
    memory.total_bytes = static_cast<int64_t>(total);
  }
#endif
  return memory;
}

std::string PciBusIdOf(int index) {
#ifdef EMBEDDING_CUDA
  char id[32] = {};  // "dddd:bb:dd.f" and its terminator fit in 13
  if (cudaDeviceGetPCIBusId(id, sizeof(id), index) == cudaSuccess) return id;
#endif
  static_cast<void>(index);
  return std::string();
}

void ResetPeakDeviceMemory(int index) {
#ifdef EMBEDDING_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
#endif
}

void SynchronizeDevice(int index) {
#ifdef EMBEDDING_CUDA
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  c10::cuda::device_synchronize();
#endif
}

void ReleaseCachedDeviceMemory() {
#ifdef EMBEDDING_CUDA
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace embedding::model_store
