// The Hub's HTTP protocol as the official clients speak it: a revision resolved to a commit
// and its file listing through /api/models/{repo}/revision/{rev}, a file's metadata by HEAD on
// {endpoint}/{repo}/resolve/{commit}/{path}, and the bytes by GET. The bearer token goes to the
// endpoint's own origin only: a redirect on that origin (a renamed repository) keeps it, one to
// another host (the large-file store) drops it. Hub errors (X-Error-Code) become statuses that
// say what to do; no message ever carries the token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/hub/http_client.h"
#include "model_store/hub/hub_reference.h"
#include "model_store/hub/hub_settings.h"

namespace embedding::model_store {

struct RepoFile {
  std::string path;        // as listed (validated by the caller before it touches disk)
  int64_t size = -1;       // -1: not listed
  std::string blob_id;     // git blob SHA-1, when listed
  std::string lfs_sha256;  // for a large file, when listed
};

struct RevisionInfo {
  std::string commit;
  std::vector<RepoFile> files;
};

// Where a file's bytes are and what they must be.
struct FileLocation {
  std::string url;    // the Hub's resolve URL, or the large-file store it redirects to
  std::string etag;   // X-Linked-Etag, else ETag: unquoted, no W/
  int64_t size = -1;  // X-Linked-Size, else Content-Length
};

class HubApi {
 public:
  // `settings` and `http` must outlive the object. Thread-compatible.
  HubApi(const HubSettings& settings, HttpClient* http);

  // The commit `reference` is at, and its files. The statuses of HubError.
  absl::StatusOr<RevisionInfo> Revision(const HubReference& reference);

  // A file's location and announced digest and size at `commit`.
  absl::StatusOr<FileLocation> Locate(const std::string& repo, const std::string& commit,
                                      const std::string& path);

  // GET `url` (from Locate) from byte `range_start` on, following redirects, into `sink`.
  // Returns the final response (status 200 or 206; the caller checks Content-Range).
  absl::StatusOr<HttpResponse> Download(const std::string& url, int64_t range_start,
                                        const BodySink& sink);

  const HubSettings& settings() const { return settings_; }

 private:
  // Sends `request`, following up to 10 redirects; stops at the first redirect to another
  // origin when `stop_at_other_origin`. The token goes to the endpoint's origin only.
  absl::StatusOr<HttpResponse> Send(HttpRequest request, const BodySink* sink,
                                    bool stop_at_other_origin, std::string* final_url);

  const HubSettings& settings_;
  HttpClient* http_;
  const std::string origin_;
};

// The status for a Hub response that is not a success, about `what` ("revision main",
// "config.json") in `repo`: NOT_FOUND (RepoNotFound, RevisionNotFound, EntryNotFound, 404),
// PERMISSION_DENIED (GatedRepo, 403), UNAUTHENTICATED (401), UNAVAILABLE (429, 5xx),
// UNKNOWN otherwise. The Hub's X-Error-Message is quoted when present.
absl::Status HubError(const HttpResponse& response, const std::string& repo,
                      const std::string& what, const HubSettings& settings);

}  // namespace embedding::model_store
