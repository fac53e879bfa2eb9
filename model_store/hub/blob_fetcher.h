// Puts one file's bytes into the cache as blobs/{etag}, verified: downloaded into
// blobs/{etag}.incomplete, resumed with a Range request after a dropped connection, checked
// against the digest its etag names (SHA-256 for a large file, git blob SHA-1 otherwise) and
// against the announced size, and only then renamed into place. An exclusive lock on
// .locks/{repo folder}/{etag}.lock (the same path huggingface_hub locks) keeps two processes
// sharing a cache volume from writing one blob twice.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model_store/hub/download_progress.h"
#include "model_store/hub/hub_api.h"

namespace embedding::model_store {

struct BlobTarget {
  std::string cache_dir;
  std::string repo;  // "BAAI/bge-m3"
  std::string path;  // the repository path, for messages and progress
  FileLocation location;
};

// The blob's path. Already there: returned without a request. DATA_LOSS naming the file and
// both digests (or both sizes) when the bytes are not what was announced, leaving neither the
// blob nor its .incomplete behind; RESOURCE_EXHAUSTED when the disk has too little room for
// the announced size; the Hub's statuses (hub_api.h) otherwise, after up to 5 attempts for a
// transient failure (connection, 429, 5xx), 0.5 s doubling to 4 s apart.
absl::StatusOr<std::string> FetchBlob(HubApi& api, const BlobTarget& target,
                                      DownloadProgress* progress);

}  // namespace embedding::model_store
