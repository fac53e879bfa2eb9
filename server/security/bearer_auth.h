// Bearer-token authentication. The valid tokens come from a file, one per line, several at once
// so they can be rotated; the file is re-read when it changes, without a restart. A presented
// token is compared with each valid one by SHA-256 digest through OpenSSL's CRYPTO_memcmp:
// constant time, and the token's length does not leak either. No token ever reaches a log line
// or an error message.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace embedding::server {

class BearerAuth {
 public:
  // Told why a changed file was not taken (the previous tokens stay); must be thread-safe.
  using Warn = std::function<void(absl::string_view message)>;

  // Reads `path` (blank lines and lines starting with # are skipped). INVALID_ARGUMENT naming
  // --auth-token-file when it cannot be read or holds no token.
  static absl::StatusOr<std::unique_ptr<BearerAuth>> Load(const std::string& path,
                                                          Warn warn = nullptr);

  // OK when `authorization` (the header as sent, "" when absent) is "Bearer <a valid token>";
  // UNAUTHENTICATED saying what is wrong, never echoing it. Thread-safe.
  absl::Status Check(absl::string_view authorization) const;

 private:
  using Digest = std::array<unsigned char, 32>;
  BearerAuth(std::string path, Warn warn) : path_(std::move(path)), warn_(std::move(warn)) {}
  // Re-reads the file when its modification time changed, at most once per second. A file that
  // became unreadable or empty keeps the previous tokens (and tells `warn_` once).
  void ReloadIfChanged() const;
  absl::Status ReadTokens(std::vector<Digest>* digests) const;

  const std::string path_;
  const Warn warn_;
  mutable std::mutex mu_;
  mutable std::vector<Digest> digests_;
  mutable std::filesystem::file_time_type loaded_mtime_;
  mutable absl::Time last_check_ = absl::InfinitePast();
};

}  // namespace embedding::server
