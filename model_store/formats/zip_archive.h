// Read-only access to the records of a zip archive (libzip), for torch.save's format: records
// are read whole, and only stored (uncompressed) ones, so what a record costs is bounded by the
// file's own size before anything is allocated for it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct zip;

namespace embedding::model_store {

class ZipArchive {
 public:
  // Opens `path`. DATA_LOSS naming the file when it is not a readable zip archive.
  static absl::StatusOr<std::unique_ptr<ZipArchive>> Open(const std::string& path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  // The name of the archive's first record ("archive/data.pkl"), "" for an empty archive.
  std::string FirstName() const;
  // Whether a record named `name` exists.
  bool Has(const std::string& name) const;
  // The record's size in bytes, from the central directory (nothing is read).
  // DATA_LOSS naming the record when it is missing or compressed.
  absl::StatusOr<uint64_t> StoredSize(const std::string& name) const;
  // The record's bytes. DATA_LOSS naming the record when it is missing, compressed or short.
  absl::StatusOr<std::string> Read(const std::string& name) const;

 private:
  ZipArchive(std::string path, struct zip* archive, uint64_t file_size)
      : path_(std::move(path)), archive_(archive), file_size_(file_size) {}
  std::string path_;
  struct zip* archive_;
  uint64_t file_size_;
};

}  // namespace embedding::model_store
