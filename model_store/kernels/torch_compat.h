// Internal to model_store: the one place where code differs between the LibTorch versions the
// tree builds against (Debian's 1.13 on the CPU; a 2.x, with CUDA or not, on a GPU machine).
// Nothing else tests TORCH_VERSION.
#pragma once

#include <torch/types.h>

#include "model_store/kernels/compute_device.h"

namespace embedding::model_store {

// softmax(q k^T scale) v, query i seeing keys j <= i where `causal` (then q and k are equally
// long), and only the keys `mask` (bool, broadcast to [B, H, Lq, Lk]; true: seen) allows where
// it is defined (never with `causal`). q [B, H, Lq, d], k and v [B, H, Lk, d] in one dtype on
// one device; views with a unit last stride. LibTorch's fused kernel from 2.1 on (flash without
// a mask, memory-efficient with one; never an [L, L] score matrix), else the same arithmetic as
// explicit products in q's dtype (what 1.13 has; the suite runs it on the CPU).
torch::Tensor ScaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double scale, bool causal,
                                        const torch::Tensor& mask = torch::Tensor());

// Keeps fp32 products in fp32 on a GPU (no TF32), so fp32 there is comparable with the CPU.
void KeepFp32Exact();

// Device `index`'s memory now (compute_device.h); all zero in a build without CUDA.
DeviceMemory DeviceMemoryOf(int index);
void ResetPeakDeviceMemory(int index);
// Device `index`'s PCI bus id (compute_device.h); empty without CUDA.
std::string PciBusIdOf(int index);
// Waits for the work queued on device `index` (timing a forward pass); nothing without CUDA.
void SynchronizeDevice(int index);
// Hands the allocator's cached, unused blocks back to the device (after a model's weights are
// freed, so another version or process can have them); nothing without CUDA.
void ReleaseCachedDeviceMemory();

}  // namespace embedding::model_store
