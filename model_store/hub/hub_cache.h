// Hugging Face's shared model cache, as huggingface_hub, the JavaScript Hub client and this
// server all use it, so a model one of them downloaded is found by the others:
//   <cache>/models--{org}--{name}/refs/{revision}          the 40-hex commit a branch or tag is at
//   <cache>/models--{org}--{name}/snapshots/{commit}/{path} a relative symlink to
//   ../../blobs/{etag} <cache>/models--{org}--{name}/blobs/{etag}              the bytes
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model_store/hub/hub_reference.h"

namespace embedding::model_store {

// The cache directory: `flag` when set, else HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
// $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub.
std::string ResolveHubCacheDir(const std::string& flag);

// HF_HUB_OFFLINE set to 1, ON, YES or TRUE (any case).
bool HubOfflineFromEnvironment();

// "models--BAAI--bge-m3" for "BAAI/bge-m3".
std::string RepoFolderName(const std::string& repo);

struct CachedSnapshot {
  std::string directory;  // <cache>/models--.../snapshots/<commit>
  std::string commit;
};

// The snapshot a reference points to: the revision itself when it is a commit, else the commit
// in refs/<revision>. NOT_FOUND naming the repository, the revision and the cache path when it
// is not there; DATA_LOSS for a ref that is not a commit, or a snapshot entry that is a
// symlink leading outside the repository's folder (a cache must not make the server read
// arbitrary files).
absl::StatusOr<CachedSnapshot> FindCachedSnapshot(const std::string& cache_dir,
                                                  const HubReference& reference);

}  // namespace embedding::model_store
