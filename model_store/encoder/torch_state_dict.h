// Internal to model_store: the tensors of a `torch.save(module.state_dict(), path)` file (the
// zip format), read without executing any pickle code. LibTorch 1.13's torch::pickle_load
// turns the collections.OrderedDict that every state_dict pickles as into None, so this reads
// the pickle itself with an allow-list: dicts, tuples, strings, numbers and
// torch._utils._rebuild_tensor_v2 over the archive's storages. Any other global or opcode is
// refused before anything is built from it.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// The file's top-level dict of name -> tensor (copied out of the archive, contiguous).
// DATA_LOSS naming the file for a truncated or malformed zip or pickle, a refused global or
// opcode (named), a storage that does not hold the tensor it is viewed as, or a value that is
// not a tensor.
absl::StatusOr<std::map<std::string, torch::Tensor>> ReadTorchStateDict(const std::string& path);

}  // namespace embedding::model_store
