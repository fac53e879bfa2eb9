// What the CPU can do natively, read once from /proc/cpuinfo.
#pragma once

#include <string>

namespace embedding::model_store {

// True when the CPU multiplies bf16 natively (avx512_bf16 or amx_bf16). Elsewhere bf16 is
// emulated and slower than fp32, so the encoder refuses it.
bool CpuHasNativeBf16();

// The CPU's model name and the flags that decide which dtype is fastest (vector width, bf16,
// int8 dot products, AMX), e.g. "Intel(R) Xeon(R) Processor; avx2 avx512f avx512_bf16
// amx_bf16 amx_int8". Logged beside every measured figure, and part of the key that --dtype=auto's
// choice is cached under.
const std::string& CpuIsa();

}  // namespace embedding::model_store
