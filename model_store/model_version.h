// A short content hash of a model directory, reported as the model's version.
#pragma once

#include <string>

namespace embedding::model_store {

// 16 hex digits of a 64-bit FNV-1a over config.json, tokenizer files and every *.safetensors
// file (names and bytes, in sorted order). Same files, same version; any byte changed, a new
// one. Unreadable files contribute their name only.
std::string ComputeModelVersion(const std::string& model_dir);

}  // namespace embedding::model_store
