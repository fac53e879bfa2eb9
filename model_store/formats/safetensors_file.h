// Memory-mapped reader for the safetensors checkpoint format.
// Every header field is validated before any tensor byte is touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

enum class DType { kF32, kF16, kBF16 };

// Bytes per element of `dtype`.
size_t DTypeSize(DType dtype);

// A tensor inside a mapped file. `data` stays valid while its SafetensorsFile lives.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t size_bytes = 0;
  // Which file holds it, for error messages.
  std::string file;
};

class SafetensorsFile {
 public:
  // Maps `path` read-only and validates it: header length within the file, well-formed JSON,
  // dtypes F32/F16/BF16, shapes matching byte sizes, offsets inside the data area and not
  // overlapping. Errors name the file and the tensor: NOT_FOUND (no file), DATA_LOSS (corrupt).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  // Same validation over bytes already in memory (the caller keeps them alive).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> FromBytes(const std::string& label,
                                                                    const uint8_t* bytes,
                                                                    size_t size);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

 private:
  SafetensorsFile() = default;

  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace embedding::model_store
