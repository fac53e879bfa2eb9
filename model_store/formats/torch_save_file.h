// The tensors of a `torch.save(state_dict, path)` file in the zip format PyTorch writes since
// 1.6 (`pytorch_model.bin`, bge-m3's `*.pt` heads), read without executing any pickle code:
// the pickle is interpreted with an allow-list (dicts, OrderedDict, tuples, strings, numbers
// and torch._utils._rebuild_tensor_v2 over the archive's typed storages). Any other global or
// opcode is refused before anything is built from it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model_store/formats/tensor_view.h"

namespace embedding::model_store {

class TorchSaveFile : public TensorFile {
 public:
  // Reads `path`'s top-level dict of name -> tensor. Storages are read once however many views
  // share them; a contiguous view points into its storage, any other is gathered into a buffer
  // of its own. DATA_LOSS naming the file for the legacy (pre-1.6) format, a truncated or
  // malformed zip or pickle, a refused global or opcode (named), a compressed or big-endian
  // record, a view reaching past its storage, or a value that is not a tensor.
  static absl::StatusOr<std::unique_ptr<TorchSaveFile>> Open(const std::string& path);

  const std::map<std::string, TensorView>& tensors() const override { return tensors_; }

 private:
  TorchSaveFile() = default;
  friend class TorchSaveBuilder;

  std::map<std::string, std::string> storages_;  // record name -> bytes
  std::map<std::string, std::string> gathered_;  // tensor name -> bytes of a strided view
  std::map<std::string, TensorView> tensors_;
};

}  // namespace embedding::model_store
