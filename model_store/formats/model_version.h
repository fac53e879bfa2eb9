// Which version of a model directory to serve, and its identity: a content hash for a flat
// directory, the subdirectory's name for a versioned one (`<dir>/<version>/config.json`).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// 16 hex digits of a 64-bit FNV-1a over config.json, tokenizer files and every *.safetensors
// file (names and bytes, in sorted order). Same files, same version; any byte changed, a new
// one. Unreadable files contribute their name only. Reads every byte: call it when loading.
std::string ComputeModelVersion(const std::string& model_dir);

struct LocatedVersion {
  std::string directory;  // the directory holding config.json
  std::string version;    // the subdirectory's name; empty for a flat directory (hash it)
  // Names, sizes and modification times of the directory's files: cheap to compute, and it
  // changes when a file does, so a poller can see a new or still-growing version.
  std::string signature;
};

// `dir` itself when it holds config.json (flat layout); otherwise its greatest subdirectory
// holding config.json (versioned layout: names of digits compare as numbers, others as
// strings). NOT_FOUND naming `dir` when neither exists.
absl::StatusOr<LocatedVersion> LocateModelVersion(const std::string& dir);

}  // namespace embedding::model_store
