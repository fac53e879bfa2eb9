// Memory-mapped reader for the safetensors checkpoint format.
// Every header field is validated before any tensor byte is touched.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model_store/formats/tensor_view.h"

namespace embedding::model_store {

class SafetensorsFile : public TensorFile {
 public:
  // Maps `path` read-only and validates it: header length within the file, well-formed JSON,
  // known dtypes (every one of the format: see DType), shapes matching byte sizes, offsets inside
  // the data area and not overlapping. Errors name the file and the tensor: NOT_FOUND (no file),
  // DATA_LOSS (corrupt).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  // Same validation over bytes already in memory (the caller keeps them alive).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> FromBytes(const std::string& label,
                                                                    const uint8_t* bytes,
                                                                    size_t size);

  ~SafetensorsFile() override;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorView>& tensors() const override { return tensors_; }

 private:
  SafetensorsFile() = default;

  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace embedding::model_store
