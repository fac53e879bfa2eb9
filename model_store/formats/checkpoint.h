// The weights of one model directory, in whichever layout the Hub holds them:
// `model.safetensors`, shards listed in `model.safetensors.index.json`, or, when there is no
// safetensors, `pytorch_model.bin` or the shards of `pytorch_model.bin.index.json` (read by
// TorchSaveFile, which runs no pickle code). Owns the files; lookups are thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/tensor_view.h"

namespace embedding::model_store {

// The weights layouts in the order they are tried: safetensors first, as transformers and
// Text Embeddings Inference prefer it (mapped, no pickle), each single file before its shards'
// index (a name ending ".index.json").
inline constexpr const char* kWeightLayouts[] = {
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
    "pytorch_model.bin.index.json"};

// One weights file by its extension: `*.safetensors` mapped, anything else as torch.save's
// zip. NOT_FOUND for a missing file; DATA_LOSS naming the file (and tensor) when corrupt.
absl::StatusOr<std::unique_ptr<TensorFile>> OpenTensorFile(const std::string& path);

class Checkpoint {
 public:
  // Opens the first layout present, in the order above. NOT_FOUND naming every file looked
  // for when none is; DATA_LOSS for a corrupt file, an index naming a missing or unsafe shard
  // or a tensor absent from it.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& model_dir);

  // The tensor named `name`, or nullptr; a hit counts as read (see UnreadTensors). Old BERT
  // checkpoints name LayerNorm parameters `gamma` and `beta`: `X.weight` and `X.bias` find
  // them when the file has no tensor of that name, as transformers renames them on load.
  const TensorView* Find(const std::string& name) const;

  // Tensors no Find has returned, by name: what the model does not use (transformers' saved
  // `position_ids` buffers, heads of other tasks), for the load log.
  std::vector<const TensorView*> UnreadTensors() const;

  // The layout it was read from: "model.safetensors", "pytorch_model.bin.index.json (2 shards)".
  const std::string& layout() const { return layout_; }

 private:
  struct Entry {
    const TensorView* view;
    mutable std::atomic<bool> read{false};
  };
  void Index(const std::string& name, const TensorView* view);

  std::vector<std::unique_ptr<TensorFile>> files_;
  std::map<std::string, Entry> index_;
  std::map<std::string, std::string> aliases_;  // "X.weight" -> "X.gamma"
  std::string layout_;
};

}  // namespace embedding::model_store
