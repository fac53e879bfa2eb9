// What a calibration run has finished: each (bucket, τ)'s document and query vectors, one JSON
// line each, appended and flushed as it completes, so that an interrupted run (a deadline, a
// restarted pod, Ctrl-C) resumes where it stopped instead of starting over.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace embedding::client {

struct SavedVectors {
  std::vector<std::vector<float>> documents, queries;
};

class CalibrationState {
 public:
  // Opens `path` for the run `fingerprint` names (the model's version and the tasks, see
  // CalibrationFingerprint). With `resume` it keeps what the file holds, after checking that it
  // belongs to this run (INVALID_ARGUMENT naming --resume otherwise, or when there is no file);
  // a last line cut short by the interruption is dropped. Without, it starts the file afresh.
  // INTERNAL naming --state-file when it cannot write there.
  static absl::StatusOr<CalibrationState> Open(const std::string& path,
                                               const std::string& fingerprint, bool resume);

  // The vectors saved for (bucket, tau), or null.
  const SavedVectors* Find(const std::string& bucket, float tau) const;

  // Appends (bucket, tau)'s vectors and flushes them to the file. INTERNAL naming
  // --state-file when it cannot.
  absl::Status Save(const std::string& bucket, float tau, SavedVectors vectors);

  size_t size() const { return saved_.size(); }

 private:
  std::string path_;
  std::map<std::pair<std::string, float>, SavedVectors> saved_;
};

// A digest of everything the saved vectors depend on: the model and its version, the query
// prompt and every task's documents and queries (so a changed corpus, seed or model starts over).
std::string CalibrationFingerprint(const std::string& model_version, const std::string& prompt,
                                   const std::string& tasks_json);

}  // namespace embedding::client
