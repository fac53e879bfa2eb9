#include "model_store/hub/snapshot_pull.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/hub/blob_fetcher.h"
#include "model_store/hub/hub_api.h"
#include "model_store/hub/model_file_selection.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kMaxMetadataBytes = 16 << 20;

absl::StatusOr<std::string> ReadSmallFile(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot be read"));
  if (size > kMaxMetadataBytes) {
    return absl::DataLossError(absl::StrCat(path.string(), ": ", size,
                                            " bytes, over the 16 MiB a metadata file may have"));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to `path` through a temporary file and a rename: readers see all or nothing.
absl::Status WriteAtomically(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path temporary = absl::StrCat(path.string(), ".tmp.", getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush())
      return absl::PermissionDeniedError(absl::StrCat(path.string(), ": cannot write"));
  }
  fs::rename(temporary, path, ec);
  if (ec) return absl::InternalError(absl::StrCat(path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

// snapshots/{commit}/{path} -> ../../blobs/{etag} (relative, as every Hub client writes it),
// replaced atomically; its folders must stay inside the snapshot even if one is a symlink.
absl::Status LinkIntoSnapshot(const fs::path& snapshot, const std::string& path,
                              const fs::path& blob) {
  const fs::path link = snapshot / path;
  std::error_code ec;
  fs::create_directories(snapshot, ec);
  // Checked before any folder is created: weakly_canonical resolves the part that exists.
  const fs::path parent = fs::weakly_canonical(link.parent_path(), ec);
  const fs::path inside = parent.lexically_relative(fs::weakly_canonical(snapshot, ec));
  if (ec || inside.empty() || *inside.begin() == "..") {
    return absl::DataLossError(absl::StrCat(link.string(), ": its folder leads outside ",
                                            snapshot.string(), "; refusing to write"));
  }
  fs::create_directories(link.parent_path(), ec);
  const fs::path temporary = absl::StrCat(link.string(), ".tmp.", getpid());
  fs::remove(temporary, ec);
  fs::create_symlink(blob.lexically_relative(link.parent_path()), temporary, ec);
  if (!ec) fs::rename(temporary, link, ec);
  if (ec) return absl::InternalError(absl::StrCat(link.string(), ": cannot link: ", ec.message()));
  return absl::OkStatus();
}

// Every file under the snapshot, as repository paths.
std::set<std::string> LocalListing(const fs::path& snapshot) {
  std::set<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (fs::is_regular_file(it->path(), ec))  // follows the link: a dangling one is missing
      files.insert(it->path().lexically_relative(snapshot).generic_string());
  }
  return files;
}

// A snapshot already holding every file its own metadata asks for.
bool CompleteInCache(const std::string& repo, const fs::path& snapshot) {
  std::error_code ec;
  if (!fs::is_directory(snapshot, ec)) return false;
  auto files = SelectModelFiles(repo, LocalListing(snapshot), [&](const std::string& path) {
    return ReadSmallFile(snapshot / path);
  });
  return files.ok();
}

// Fetches the files of one commit into the cache, each at most once.
class CommitFetcher {
 public:
  CommitFetcher(HubApi& api, const HubReference& reference, const RevisionInfo& info,
                DownloadProgress* progress)
      : api_(api),
        reference_(reference),
        info_(info),
        progress_(progress),
        snapshot_(fs::path(api.settings().cache_dir) / RepoFolderName(reference.repo) /
                  "snapshots" / info.commit) {
    for (const RepoFile& file : info.files) listed_[file.path] = &file;
  }

  std::set<std::string> Listing() const {
    std::set<std::string> paths;
    for (const auto& [path, file] : listed_) paths.insert(path);
    return paths;
  }

  absl::Status Fetch(const std::string& path) {
    if (done_.count(path) > 0) return absl::OkStatus();
    RETURN_IF_ERROR(ValidateRepoPath(path));
    const std::string& repo = reference_.repo;
    ASSIGN_OR_RETURN(FileLocation location, api_.Locate(repo, info_.commit, path));
    RETURN_IF_ERROR(CheckAgainstListing(path, location));
    ASSIGN_OR_RETURN(std::string blob,
                     FetchBlob(api_, {api_.settings().cache_dir, repo, path, location}, progress_));
    RETURN_IF_ERROR(LinkIntoSnapshot(snapshot_, path, blob));
    done_.insert(path);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Read(const std::string& path) {
    RETURN_IF_ERROR(Fetch(path));
    return ReadSmallFile(snapshot_ / path);
  }

 private:
  // The file's announcement must agree with the listing the revision came with.
  absl::Status CheckAgainstListing(const std::string& path, const FileLocation& location) {
    const RepoFile& file = *listed_.at(path);
    const std::string& listed_digest = !file.lfs_sha256.empty() ? file.lfs_sha256 : file.blob_id;
    const bool digest_differs = !listed_digest.empty() && listed_digest != location.etag;
    const bool size_differs = file.size >= 0 && file.size != location.size;
    if (!digest_differs && !size_differs) return absl::OkStatus();
    return absl::DataLossError(
        absl::StrCat(reference_.repo, ": ", path, ": the file's announcement (", location.etag,
                     ", ", location.size, " bytes) differs from the repository listing (",
                     listed_digest, ", ", file.size, " bytes)"));
  }

  HubApi& api_;
  const HubReference& reference_;
  const RevisionInfo& info_;
  DownloadProgress* progress_;
  const fs::path snapshot_;
  std::map<std::string, const RepoFile*> listed_;
  std::set<std::string> done_;
};

absl::StatusOr<CachedSnapshot> Download(const HubReference& reference, const HubSettings& settings,
                                        HubApi& api, const RevisionInfo& info,
                                        DownloadProgress* progress) {
  const fs::path folder = fs::path(settings.cache_dir) / RepoFolderName(reference.repo);
  if (!CompleteInCache(reference.repo, folder / "snapshots" / info.commit)) {
    CommitFetcher fetcher(api, reference, info, progress);
    ASSIGN_OR_RETURN(std::vector<std::string> files,
                     SelectModelFiles(reference.repo, fetcher.Listing(),
                                      [&](const std::string& path) { return fetcher.Read(path); }));
    for (const std::string& path : files) RETURN_IF_ERROR(fetcher.Fetch(path));
  }
  if (reference.revision != info.commit)
    RETURN_IF_ERROR(WriteAtomically(folder / "refs" / reference.revision, info.commit));
  return FindCachedSnapshot(settings.cache_dir, HubReference{reference.repo, info.commit});
}

}  // namespace

absl::StatusOr<CachedSnapshot> PullSnapshot(const HubReference& reference,
                                            const HubSettings& settings,
                                            DownloadProgress* progress,
                                            const HttpClientFactory& make_client) {
  auto client = [&make_client](const HttpClientOptions& options) {
    return make_client ? make_client(options) : std::make_unique<HttpClient>(options);
  };
  auto cached = FindCachedSnapshot(settings.cache_dir, reference);
  if (settings.offline) {
    if (cached.ok() || cached.status().code() != absl::StatusCode::kNotFound) return cached;
    return absl::NotFoundError(
        absl::StrCat(cached.status().message(),
                     "; offline (HF_HUB_OFFLINE or --hub-offline), so nothing is "
                     "downloaded: fill the cache first with `embedctl pull ",
                     ToString(reference), "`"));
  }
  const bool warm = cached.ok() && CompleteInCache(reference.repo, cached->directory);
  if (warm && IsCommitHash(reference.revision)) return cached;

  HttpClientOptions http_options;
  http_options.ca_bundle = settings.ca_bundle;
  if (warm) {  // a start must not wait long for a Hub it does not need
    http_options.connect_timeout = settings.warm_start_timeout;
    http_options.stall_timeout = settings.warm_start_timeout;
  }
  std::unique_ptr<HttpClient> http = client(http_options);
  HubApi api(settings, http.get());
  auto info = api.Revision(reference);
  if (!info.ok()) {
    if (warm && info.status().code() == absl::StatusCode::kUnavailable) {
      progress->Note(absl::StrCat("the Hub did not answer (", info.status().message(),
                                  "); starting ", ToString(reference), " from the cached commit ",
                                  cached->commit));
      return cached;
    }
    return info.status();
  }
  if (warm && info->commit == cached->commit) return cached;
  // Downloads need the patient client.
  std::unique_ptr<HttpClient> download_http = client(HttpClientOptions{settings.ca_bundle});
  HubApi download_api(settings, download_http.get());
  return Download(reference, settings, download_api, *info, progress);
}

}  // namespace embedding::model_store
