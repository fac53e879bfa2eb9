// The weights of one model directory: `model.safetensors`, or shards listed in
// `model.safetensors.index.json`. Owns the mapped files; lookups are read-only and thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/safetensors_file.h"

namespace embedding::model_store {

class Checkpoint {
 public:
  // Opens the single file or every shard of the index. NOT_FOUND when neither exists;
  // DATA_LOSS for a corrupt file, an index naming a missing shard or a tensor absent from it.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& model_dir);

  // The tensor named `name`, or nullptr.
  const TensorView* Find(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

}  // namespace embedding::model_store
