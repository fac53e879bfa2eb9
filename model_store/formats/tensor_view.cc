#include "model_store/formats/tensor_view.h"

#include "common/name_table.h"

namespace embedding::model_store {
namespace {

// Safetensors' spellings (its format's "dtype" field).
constexpr NamedValue<DType> kDTypeNames[] = {
    {DType::kF64, "F64"},   {DType::kF32, "F32"},        {DType::kF16, "F16"},
    {DType::kBF16, "BF16"}, {DType::kI64, "I64"},        {DType::kI32, "I32"},
    {DType::kI16, "I16"},   {DType::kI8, "I8"},          {DType::kU64, "U64"},
    {DType::kU32, "U32"},   {DType::kU16, "U16"},        {DType::kU8, "U8"},
    {DType::kBool, "BOOL"}, {DType::kF8E4M3, "F8_E4M3"}, {DType::kF8E5M2, "F8_E5M2"}};

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return 1;
  }
  return 1;
}

const char* DTypeName(DType dtype) { return NameOf(kDTypeNames, dtype); }

std::optional<DType> DTypeNamed(absl::string_view name) { return ValueNamed(kDTypeNames, name); }

std::string DTypeNames() { return JoinedNames(kDTypeNames); }

bool IsFloating(DType dtype) {
  return dtype == DType::kF64 || dtype == DType::kF32 || dtype == DType::kF16 ||
         dtype == DType::kBF16;
}

const char* FloatingDTypeNames() { return "F32, F16, BF16, F64"; }

}  // namespace embedding::model_store
