// A Hub model into Hugging Face's shared cache, ready to load: the one entry point the server
// (at start and on reload) and `embedctl pull` use.
//   offline         the cache only, no network call at all;
//   a commit        no lookup when its snapshot already holds a complete model;
//   a branch or tag one metadata request; a commit already complete in the cache is used as
//                   is, and a Hub that does not answer within the warm-start timeout means the
//                   cached commit is used (and said so);
//   otherwise       the files the model needs (model_file_selection.h), each verified into
//                   blobs/ (blob_fetcher.h) and linked from snapshots/{commit}/, then
//                   refs/{revision} written atomically last.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "model_store/hub/download_progress.h"
#include "model_store/hub/http_client.h"
#include "model_store/hub/hub_cache.h"
#include "model_store/hub/hub_reference.h"
#include "model_store/hub/hub_settings.h"

namespace embedding::model_store {

// Makes the HTTP client a pull talks through, given the options it needs; tests hand in a
// scripted Hub. Null: libcurl.
using HttpClientFactory = std::function<std::unique_ptr<HttpClient>(const HttpClientOptions&)>;

// The snapshot to load. Offline and not cached: NOT_FOUND naming the repository, the revision
// and the cache path. Otherwise the statuses of FindCachedSnapshot, SelectModelFiles, FetchBlob
// and HubError, each naming the repository and, for a file, its path. Blocking; safe to call
// from several processes on one cache.
absl::StatusOr<CachedSnapshot> PullSnapshot(const HubReference& reference,
                                            const HubSettings& settings,
                                            DownloadProgress* progress,
                                            const HttpClientFactory& make_client = nullptr);

}  // namespace embedding::model_store
