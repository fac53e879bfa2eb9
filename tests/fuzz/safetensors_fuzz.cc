// libFuzzer target: a safetensors file's bytes. The reader must refuse a bad file with an
// error, and every tensor it accepts must lie inside the bytes with a size its shape explains.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model_store/formats/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = embedding::model_store::SafetensorsFile::FromBytes("fuzz", data, size);
  if (!file.ok()) return 0;
  for (const auto& [name, tensor] : (*file)->tensors()) {
    if (tensor.size_bytes > 0 &&
        (tensor.data < data || tensor.data + tensor.size_bytes > data + size)) {
      std::abort();
    }
    size_t elements = 1;
    for (int64_t dim : tensor.shape) elements *= static_cast<size_t>(dim);
    if (elements * embedding::model_store::DTypeSize(tensor.dtype) != tensor.size_bytes)
      std::abort();
    // Touch every byte: ASan catches a view that reaches past the input.
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < tensor.size_bytes; ++i) sum += tensor.data[i];
  }
  return 0;
}
