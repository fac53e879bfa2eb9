#include "model_store/hub/blob_fetcher.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "model_store/formats/content_digest.h"
#include "model_store/hub/hub_cache.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

constexpr int kAttempts = 5;

// An exclusive flock held for the object's life; the kernel drops it if the process dies.
class FileLock {
 public:
  static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
      if (fd >= 0) close(fd);
      return absl::PermissionDeniedError(
          absl::StrCat(path.string(), ": cannot create or lock (is the cache writable?)"));
    }
    return std::unique_ptr<FileLock>(new FileLock(fd));
  }
  ~FileLock() { close(fd_); }  // releases the lock

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// The start offset of a 206's "Content-Range: bytes N-M/T".
int64_t RangeStart(const HttpResponse& head) {
  auto it = head.headers.find("content-range");
  if (it == head.headers.end()) return -1;
  absl::string_view value = it->second;
  if (!absl::ConsumePrefix(&value, "bytes ")) return -1;
  int64_t start = -1;
  return absl::SimpleAtoi(value.substr(0, value.find('-')), &start) ? start : -1;
}

bool Transient(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

// One attempt: appends what the server sends to `file` from `*have` on.
absl::Status Attempt(HubApi& api, const BlobTarget& target, std::FILE* file, int64_t* have,
                     DownloadProgress* progress) {
  const int64_t size = target.location.size;
  bool first_chunk = true;
  absl::Status sink_error;
  const BodySink sink = [&](const HttpResponse& head, const char* data, size_t bytes) {
    if (first_chunk) {
      first_chunk = false;
      if (head.status == 200 && *have > 0) {  // the server ignored the Range: start over
        if (std::fflush(file) != 0 || ftruncate(fileno(file), 0) != 0)
          return absl::InternalError("cannot truncate the partial download");
        std::fseek(file, 0, SEEK_SET);
        *have = 0;
      } else if (head.status == 206 && RangeStart(head) != *have) {
        return absl::UnavailableError(
            absl::StrCat("the server resumed at byte ", RangeStart(head), ", not at ", *have));
      }
    }
    if (*have + static_cast<int64_t>(bytes) > size) {
      return absl::DataLossError(absl::StrCat(target.repo, ": ", target.path,
                                              ": the server sent more than the announced ", size,
                                              " bytes"));
    }
    if (std::fwrite(data, 1, bytes, file) != bytes)
      return absl::ResourceExhaustedError("cannot write the download (disk full?)");
    *have += bytes;
    progress->FileAdvanced(*have);
    return absl::OkStatus();
  };
  auto response = api.Download(target.location.url, *have, sink);
  if (std::fflush(file) != 0) return absl::ResourceExhaustedError("cannot write the download");
  if (!response.ok()) return response.status();
  if (response->status == 416) {  // our offset is past the file the server has: start over
    if (ftruncate(fileno(file), 0) != 0) return absl::InternalError("cannot truncate");
    std::fseek(file, 0, SEEK_SET);
    *have = 0;
    return absl::UnavailableError("the server refused the resume offset; starting over");
  }
  if (response->status != 200 && response->status != 206)
    return HubError(*response, target.repo, target.path, api.settings());
  if (*have != size) {
    return absl::DataLossError(absl::StrCat(target.repo, ": ", target.path, ": the server sent ",
                                            *have, " bytes, but announced ", size));
  }
  return absl::OkStatus();
}

absl::Status CheckRoom(const fs::path& dir, int64_t needed, const BlobTarget& target) {
  struct statvfs fs_stats {};
  if (statvfs(dir.c_str(), &fs_stats) != 0) return absl::OkStatus();
  const int64_t free_bytes = static_cast<int64_t>(fs_stats.f_bavail) * fs_stats.f_frsize;
  if (free_bytes >= needed) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(target.repo, ": ", target.path, " needs ",
                                                   needed, " more bytes in ", dir.string(),
                                                   ", which has ", free_bytes, " free"));
}

absl::Status Verify(const BlobTarget& target, const fs::path& file, DigestKind kind) {
  ASSIGN_OR_RETURN(std::string digest, FileDigest(file.string(), kind));
  if (digest == target.location.etag) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      target.repo, ": ", target.path, ": the received bytes have ",
      kind == DigestKind::kSha256 ? "SHA-256 " : "git blob SHA-1 ", digest, ", the Hub announced ",
      target.location.etag, "; nothing was written to the cache"));
}

}  // namespace

absl::StatusOr<std::string> FetchBlob(HubApi& api, const BlobTarget& target,
                                      DownloadProgress* progress) {
  const std::string& etag = target.location.etag;
  auto kind = DigestKindOfEtag(etag);
  if (!kind.ok()) {
    return absl::DataLossError(absl::StrCat(target.repo, ": ", target.path, ": ",
                                            kind.status().message(), "; cannot verify it"));
  }
  const fs::path folder = fs::path(target.cache_dir) / RepoFolderName(target.repo);
  const fs::path blob = folder / "blobs" / etag;
  std::error_code ec;
  if (fs::is_regular_file(blob, ec)) return blob.string();
  fs::create_directories(blob.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(blob.parent_path().string(), ": cannot create: ", ec.message()));
  }
  ASSIGN_OR_RETURN(auto lock, FileLock::Acquire(fs::path(target.cache_dir) / ".locks" /
                                                RepoFolderName(target.repo) / (etag + ".lock")));
  if (fs::is_regular_file(blob, ec)) return blob.string();  // another process finished it

  const fs::path partial = fs::path(blob.string() + ".incomplete");
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(partial.c_str(), "ab"),
                                                          std::fclose);
  if (file == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(partial.string(), ": cannot open for writing"));
  }
  int64_t have = static_cast<int64_t>(fs::file_size(partial, ec));
  if (ec || have > target.location.size) {
    if (ftruncate(fileno(file.get()), 0) != 0) return absl::InternalError("cannot truncate");
    have = 0;
  }
  RETURN_IF_ERROR(CheckRoom(blob.parent_path(), target.location.size - have, target));

  progress->FileStarted(absl::StrCat(target.repo, "/", target.path), target.location.size, have);
  absl::Status status = absl::OkStatus();
  auto finish = absl::MakeCleanup([&] { progress->FileFinished(status); });
  absl::Duration backoff = absl::Milliseconds(500);
  for (int attempt = 1; attempt <= kAttempts && have < target.location.size; ++attempt) {
    status = Attempt(api, target, file.get(), &have, progress);
    if (status.ok() || !Transient(status)) break;
    if (attempt < kAttempts) {
      absl::SleepFor(backoff);
      backoff = std::min(backoff * 2, absl::Seconds(4));
    }
  }
  file.reset();
  if (status.ok()) status = Verify(target, partial, *kind);
  if (Transient(status)) {
    // The bytes so far stay for the next pull to resume from.
    status = absl::UnavailableError(absl::StrCat(target.repo, ": ", target.path, ": ",
                                                 status.message(), " (after ", kAttempts,
                                                 " attempts; ", have, " bytes kept in ",
                                                 partial.string(), " to resume from)"));
    return status;
  }
  if (!status.ok()) {  // wrong bytes do not stay
    fs::remove(partial, ec);
    return status;
  }
  fs::rename(partial, blob, ec);
  if (ec) {
    status = absl::InternalError(
        absl::StrCat(blob.string(), ": cannot rename into place: ", ec.message()));
    return status;
  }
  return blob.string();
}

}  // namespace embedding::model_store
