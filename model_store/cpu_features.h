// What the CPU can do natively, read once from /proc/cpuinfo.
#pragma once

#include <string>

namespace embedding::model_store {

// True when the CPU multiplies bf16 natively (avx512_bf16 or amx_bf16). Elsewhere bf16 is
// emulated and slower than fp32, so the encoder refuses it.
bool CpuHasNativeBf16();

}  // namespace embedding::model_store
