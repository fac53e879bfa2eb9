// The Batch API's durable state, in one directory (--batch-dir): uploaded files, batch
// records and each batch's result lines, laid out so that a server killed at any instant and
// started again on the same directory finds every accepted file and batch, and every result
// line written before the kill:
//   files/<file id>.json       the File object (OpenAI's fields)   written atomically
//   files/<file id>.jsonl      its bytes                           written atomically
//   batches/<batch id>.json    the Batch object                    written atomically
//   batches/<batch id>.output.jsonl, .errors.jsonl                  appended, a line per result
// "Atomically" is a temporary file, fsync, rename, and an fsync of the folder. Appends are
// fdatasync'ed one line at a time; a line torn by a crash is cut when the batch is read back.
// Objects are kept as the JSON the API returns. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace embedding::server {

struct BatchStoreOptions {
  std::string dir;                      // --batch-dir
  int64_t max_file_bytes = 64 << 20;    // --batch-max-file-bytes
  int64_t max_lines = 50000;            // --batch-max-lines
  int64_t max_stored_bytes = 4LL << 30;  // --batch-max-stored-bytes
  int max_active = 4;                   // --batch-max-active
  absl::Duration retention = absl::Hours(720);  // --batch-retention-h
};

enum class ResultFile { kOutput, kErrors };

// A batch that has not ended: validating, in_progress, finalizing or cancelling.
bool BatchIsActive(const nlohmann::json& batch);

class BatchStore {
 public:
  // Creates the folders when missing and reads every record back; leftover temporary files
  // are removed. INVALID_ARGUMENT naming --batch-dir when it cannot be created or read.
  static absl::StatusOr<std::unique_ptr<BatchStore>> Open(BatchStoreOptions options);

  // Stores an upload; returns its File object. INVALID_ARGUMENT naming `purpose` (only
  // "batch"), `file` (empty, over --batch-max-file-bytes or --batch-max-lines lines);
  // RESOURCE_EXHAUSTED naming --batch-max-stored-bytes when the folder would hold more.
  absl::StatusOr<nlohmann::json> AddFile(const std::string& filename, const std::string& purpose,
                                         absl::string_view content);
  // NOT_FOUND naming file_id for an unknown id.
  absl::StatusOr<nlohmann::json> File(const std::string& id) const;
  absl::StatusOr<std::string> FileContent(const std::string& id) const;
  // {id, object: "file", deleted: true}. INVALID_ARGUMENT naming file_id for the input of a
  // batch still running.
  absl::StatusOr<nlohmann::json> DeleteFile(const std::string& id);
  std::vector<nlohmann::json> Files() const;  // newest first

  // Creates a batch from POST /v1/batches's body: input_file_id, endpoint ("/v1/embeddings"),
  // completion_window ("<N>h", 1 to 720 hours), metadata. INVALID_ARGUMENT naming the field;
  // NOT_FOUND naming input_file_id; RESOURCE_EXHAUSTED naming --batch-max-active.
  absl::StatusOr<nlohmann::json> CreateBatch(const nlohmann::json& request);
  absl::StatusOr<nlohmann::json> Batch(const std::string& id) const;  // NOT_FOUND naming batch_id
  std::vector<nlohmann::json> Batches() const;                        // newest first
  // A running batch turns "cancelling" (the runner finishes it); an ended one is returned as
  // it is. NOT_FOUND naming batch_id.
  absl::StatusOr<nlohmann::json> CancelBatch(const std::string& id);
  // Applies `edit` to the stored batch and writes it; the edited object is returned.
  absl::StatusOr<nlohmann::json> UpdateBatch(const std::string& id,
                                             const std::function<void(nlohmann::json&)>& edit);
  // The active batch to run next: a cancelling one first (it only has to end), else the
  // oldest.
  std::optional<std::string> NextActiveBatch() const;

  // Appends one result line (no newline in `line`) and syncs it to disk.
  absl::Status AppendResult(const std::string& batch_id, ResultFile file, absl::string_view line);
  // The complete lines of a batch's results (from its result File once published); a torn
  // last line is cut from the file first.
  absl::StatusOr<std::vector<std::string>> ReadResults(const std::string& batch_id,
                                                       ResultFile file);
  // Turns a finished batch's results into a File (purpose "batch_output"), or null when
  // there are none. Idempotent: the id follows from the batch's, so a crash halfway is
  // finished by calling it again.
  absl::StatusOr<nlohmann::json> PublishResults(const std::string& batch_id, ResultFile file);

  // Removes files past their expires_at (not the input of an active batch) and ended batches
  // older than the retention.
  void Expire(absl::Time now);

  const BatchStoreOptions& options() const { return options_; }

 private:
  explicit BatchStore(BatchStoreOptions options) : options_(std::move(options)) {}
  std::string FilesDir() const;
  std::string BatchesDir() const;
  std::string ResultsPath(const std::string& batch_id, ResultFile file) const;
  // The id of the File a batch's results become: it follows from the batch's id.
  static std::string PublishedId(const std::string& batch_id, ResultFile file);
  absl::Status WriteFileObject(const nlohmann::json& file);
  bool IsActiveInput(const std::string& file_id) const;  // mu_ held
  void RemoveFile(const std::string& id);                // mu_ held

  const BatchStoreOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> files_;
  std::map<std::string, nlohmann::json> batches_;
  int64_t stored_bytes_ = 0;
};

}  // namespace embedding::server
