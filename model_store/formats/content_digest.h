// The digests the Hub names files by: SHA-256 for large (LFS) files, and git's blob SHA-1,
// sha1("blob <size>\0" + bytes), for regular ones. OpenSSL does the hashing.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace embedding::model_store {

enum class DigestKind { kSha256, kGitBlobSha1 };

// The kind an etag names: 64 hex digits are a SHA-256, 40 a git blob SHA-1. INVALID_ARGUMENT
// for anything else (nothing to verify the bytes against).
absl::StatusOr<DigestKind> DigestKindOfEtag(const std::string& etag);

// Lowercase hex digest of a file's bytes. NOT_FOUND when it cannot be read.
absl::StatusOr<std::string> FileDigest(const std::string& path, DigestKind kind);

// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(const std::string& bytes);

}  // namespace embedding::model_store
