// What every checkpoint file format yields: named tensors as dtype, shape and bytes, held by
// the file object that read them (mapped safetensors, or storages read out of a torch.save zip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace embedding::model_store {

// Every element type safetensors and torch.save write. Only F64/F32/F16/BF16 can be weights;
// the others (transformers' I64 `position_ids` buffer, masks, counters, fp8 copies) are
// validated like any tensor and ignored unless the model reads them, which is refused.
enum class DType {
  kF64,
  kF32,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kF8E4M3,
  kF8E5M2
};

// Bytes per element of `dtype`.
size_t DTypeSize(DType dtype);
// Its safetensors spelling ("F32", "I64", "BOOL"), and the dtype a spelling names.
const char* DTypeName(DType dtype);
std::optional<DType> DTypeNamed(absl::string_view name);
// Every spelling, for refusals.
std::string DTypeNames();
// F64, F32, F16 or BF16.
bool IsFloating(DType dtype);
// "F32, F16, BF16, F64": the dtypes a weight may have, for refusals.
const char* FloatingDTypeNames();

// A tensor inside a file object. `data` stays valid while that object lives.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t size_bytes = 0;
  // Which file holds it, for error messages.
  std::string file;
};

// One file's tensors, by name; the object owns the bytes its views point into.
class TensorFile {
 public:
  virtual ~TensorFile() = default;
  virtual const std::map<std::string, TensorView>& tensors() const = 0;
};

}  // namespace embedding::model_store
