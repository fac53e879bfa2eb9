// Runs the Batch API's jobs: one thread takes the oldest active batch in the store and runs
// its lines through the same parse and core as POST /v1/embeddings, writing each result line
// to the store before it counts as done. Interactive calls come first: a line starts only
// while no door call is in flight and at most --batch-lines-in-flight of its own are, so a
// batch fills the batcher's idle time and yields at once when traffic arrives.
//
// Exactly once, across crashes: a result line's id carries its input line's index
// ("batch_req_<batch>_<index>"); a resumed batch reads its result files back and runs only the
// lines that have none. A line whose call was cut short by the server itself (the queue was
// full, the server is draining, a line timed out at shutdown) is not written and runs again.
//   validating → in_progress → finalizing → completed      (or failed: no line could run)
//   cancelling → cancelled;   past expires_at → expired
// Lines a cancel or expiry leaves unrun go to the error file with the code batch_cancelled or
// batch_expired, so every custom_id appears once across the output and error files.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "server/batch/batch_store.h"
#include "server/core/embedder.h"
#include "server/observability/metrics.h"

namespace embedding::server {

struct BatchRunnerOptions {
  int lines_in_flight = 1;  // --batch-lines-in-flight
  // How long one line may take once started (a line of the longest documents included).
  absl::Duration line_timeout = absl::Minutes(10);
};

class BatchRunner {
 public:
  // `store`, `embedder` and `metrics` must outlive the runner. Starts its thread.
  BatchRunner(BatchStore* store, Embedder* embedder, Metrics* metrics, BatchRunnerOptions options);
  // Stops taking lines, cancels those in flight (they run again on the next start) and joins.
  ~BatchRunner();

  // A batch was created or cancelled: look now rather than at the next poll.
  void Wake();

  struct Line;  // one line of an input file (batch_runner.cc)

 private:
  struct Progress;
  enum class Outcome { kAllRun, kStopped, kCancelled, kExpired };
  void Loop();
  void Run(const std::string& batch_id);
  // Runs every line that has no result until all have one, the server stops, or the batch is
  // cancelled or expires; lines in flight are cancelled then and waited for.
  Outcome RunLines(const std::string& batch_id, const std::vector<Line>& lines,
                   Progress& progress);
  // Starts one line, or records its error; false when the core refused it for now (queue full,
  // draining) and it went back to the pending lines.
  bool StartLine(const std::string& batch_id, const Line& line, Progress& progress);
  // Writes the results that finished lines handed over (on the runner's thread: disk I/O
  // stays off the core's workers).
  void WriteFinished(const std::string& batch_id, const std::vector<Line>& lines,
                     Progress& progress);
  // Writes one line's result (the answer's body, or its error), or puts it back to run again.
  void Record(const std::string& batch_id, const Line& line,
              const absl::StatusOr<std::string>& result, Progress& progress);
  // request_counts into the store at most once a second (`force`: now), and the gauge.
  void SaveProgress(const std::string& batch_id, size_t total, Progress& progress, bool force);
  // Ends a batch: lines without a result get `unrun_code`'s error line (none when empty), the
  // result files are published, and its status turns `status`.
  void Finish(const std::string& batch_id, const std::vector<Line>& lines, Progress& progress,
              const char* status, const char* unrun_code);
  bool Stopping();

  BatchStore* const store_;
  Embedder* const embedder_;
  Metrics* const metrics_;
  const BatchRunnerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace embedding::server
