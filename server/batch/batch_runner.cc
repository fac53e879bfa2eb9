#include "server/batch/batch_runner.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/http/api_call.h"
#include "server/http/json_body.h"
#include "server/http/openai_api.h"
#include "server/observability/server_log.h"

namespace embedding::server {

// One line of the input file: what it asks, or why it cannot run (error_status set).
struct BatchRunner::Line {
  size_t index = 0;
  nlohmann::json custom_id;  // a string, or null when the line names none
  std::string body;          // the request body, as JSON text
  absl::Status error;        // a line that cannot run: it gets this error, as /v1/embeddings would
};

// What a running batch has done; guarded by mu_ once lines are in flight.
struct BatchRunner::Progress {
  std::vector<bool> done;  // a result line is written
  int64_t completed = 0;   // in the output file
  int64_t failed = 0;      // in the error file
  std::deque<size_t> pending;                  // not yet started, or to run again
  std::map<size_t, std::shared_ptr<EmbedJob>> running;
  std::deque<std::pair<size_t, absl::StatusOr<std::string>>> finished;  // written by the runner
  absl::Time saved_at = absl::InfinitePast();
};

namespace {

constexpr absl::Duration kIdlePoll = absl::Seconds(1);
constexpr absl::Duration kBusyPoll = absl::Milliseconds(2);
constexpr absl::Duration kSaveEvery = absl::Seconds(1);
constexpr absl::Duration kExpireEvery = absl::Minutes(1);

int64_t Now() { return absl::ToUnixSeconds(absl::Now()); }

// Codes the server gave for its own reasons, not the line's: the line runs again.
bool RunsAgain(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted ||
         status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kCancelled;
}

std::string RequestId(const std::string& batch_id, size_t index) {
  return absl::StrCat("batch_req_", absl::StripPrefix(batch_id, "batch_"), "_", index);
}

// The line index a result line's id carries, or -1.
int64_t ResultIndex(absl::string_view line) {
  const absl::string_view key = "{\"id\":\"batch_req_";
  if (!absl::ConsumePrefix(&line, key)) return -1;
  const size_t quote = line.find('"');
  const size_t underscore = line.substr(0, quote).rfind('_');
  int64_t index = -1;
  if (quote == absl::string_view::npos || underscore == absl::string_view::npos ||
      !absl::SimpleAtoi(line.substr(underscore + 1, quote - underscore - 1), &index))
    return -1;
  return index;
}

// A result line in OpenAI's format, its id first (ResultIndex reads it back).
std::string ResultLine(const std::string& batch_id, size_t index, const nlohmann::json& custom_id,
                       int status_code, const std::string& body) {
  const std::string id = RequestId(batch_id, index);
  return absl::StrCat("{\"id\":\"", id, "\",\"custom_id\":", custom_id.dump(),
                      ",\"response\":{\"status_code\":", status_code, ",\"request_id\":\"", id,
                      "\",\"body\":", body, "},\"error\":null}");
}
std::string UnrunLine(const std::string& batch_id, size_t index, const nlohmann::json& custom_id,
                      const char* code) {
  const nlohmann::json error = {
      {"code", code},
      {"message", absl::StrCat("the batch ended (", code, ") before this line ran")}};
  return absl::StrCat("{\"id\":\"", RequestId(batch_id, index),
                      "\",\"custom_id\":", custom_id.dump(), ",\"response\":null,\"error\":",
                      error.dump(), "}");
}

// The input file's lines (blank ones skipped), each checked as OpenAI's batch line format and
// read as a request body is (nesting and string lengths bounded before anything is built).
std::vector<BatchRunner::Line> ReadLines(absl::string_view content, const RequestLimits& limits) {
  std::vector<BatchRunner::Line> lines;
  while (!content.empty()) {
    const size_t end = std::min(content.find('\n'), content.size());
    absl::string_view text = absl::StripAsciiWhitespace(content.substr(0, end));
    content.remove_prefix(std::min(end + 1, content.size()));
    if (text.empty()) continue;
    BatchRunner::Line& line = lines.emplace_back();
    line.index = lines.size() - 1;
    absl::StatusOr<nlohmann::json> parsed =
        ParseJsonObject(std::string_view(text.data(), text.size()), limits);
    if (!parsed.ok()) {
      line.error = parsed.status();
      continue;
    }
    const nlohmann::json& json = *parsed;
    if (json.contains("custom_id") && json["custom_id"].is_string())
      line.custom_id = json["custom_id"];
    const nlohmann::json url = json.value("url", nlohmann::json());
    if (line.custom_id.is_null()) {
      line.error = absl::InvalidArgumentError("custom_id: must be a string");
    } else if (json.value("method", nlohmann::json()) != "POST") {
      line.error = absl::InvalidArgumentError("method: must be \"POST\"");
    } else if (url != "/v1/embeddings") {
      line.error = absl::InvalidArgumentError("url: must be the batch's endpoint, /v1/embeddings");
    } else if (!json.contains("body") || !json["body"].is_object()) {
      line.error = absl::InvalidArgumentError("body: must be a JSON object");
    } else {
      line.body = json["body"].dump();
    }
  }
  return lines;
}

// OpenAI's errors object for a batch that failed validation: a custom_id used twice (results
// are matched to requests by it).
nlohmann::json DuplicateIds(const std::vector<BatchRunner::Line>& lines) {
  std::map<std::string, size_t> seen;
  nlohmann::json data = nlohmann::json::array();
  for (const auto& line : lines) {
    if (!line.custom_id.is_string()) continue;
    auto [it, fresh] = seen.emplace(line.custom_id.get<std::string>(), line.index);
    if (fresh || data.size() >= 16) continue;
    data.push_back({{"code", "duplicate_custom_id"},
                    {"message", absl::StrCat("custom_id ", line.custom_id.dump(),
                                             " is on lines ", it->second + 1, " and ",
                                             line.index + 1, "; each must be unique")},
                    {"param", "custom_id"},
                    {"line", line.index + 1}});
  }
  if (data.empty()) return nullptr;
  return {{"object", "list"}, {"data", data}};
}

}  // namespace

BatchRunner::BatchRunner(BatchStore* store, Embedder* embedder, Metrics* metrics,
                         BatchRunnerOptions options)
    : store_(store), embedder_(embedder), metrics_(metrics), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

BatchRunner::~BatchRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchRunner::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

bool BatchRunner::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void BatchRunner::Loop() {
  absl::Time expired_at = absl::InfinitePast();
  while (!Stopping()) {
    if (absl::Now() - expired_at > kExpireEvery) {
      store_->Expire(absl::Now());
      expired_at = absl::Now();
    }
    const std::optional<std::string> batch = store_->NextActiveBatch();
    if (batch) Run(*batch);
    // A batch that Run left active (stopping, or a disk error) waits for the next poll.
    if (batch && store_->NextActiveBatch() != batch) continue;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, absl::ToChronoSeconds(kIdlePoll), [this] { return stop_ || woken_; });
    woken_ = false;
  }
}

void BatchRunner::Run(const std::string& batch_id) {
  absl::StatusOr<nlohmann::json> batch = store_->Batch(batch_id);
  if (!batch.ok()) return;
  auto fail = [&](nlohmann::json errors) {
    (void)store_->UpdateBatch(batch_id, [&](nlohmann::json& b) {
      b["status"] = "failed";
      b["failed_at"] = Now();
      b["errors"] = std::move(errors);
    });
  };
  absl::StatusOr<std::string> content = store_->FileContent((*batch)["input_file_id"]);
  if (!content.ok()) {
    return fail({{"object", "list"},
                 {"data", {{{"code", "file_not_found"},
                            {"message", std::string(content.status().message())},
                            {"param", "input_file_id"}}}}});
  }
  const std::vector<Line> lines = ReadLines(*content, embedder_->limits());
  content->clear();
  if (nlohmann::json errors = DuplicateIds(lines); !errors.is_null()) return fail(errors);

  Progress progress;
  progress.done.assign(lines.size(), false);
  for (ResultFile file : {ResultFile::kOutput, ResultFile::kErrors}) {
    absl::StatusOr<std::vector<std::string>> results = store_->ReadResults(batch_id, file);
    if (!results.ok()) {
      ServerLog(LogLevel::kError, absl::StrCat("batch ", batch_id, ": ", results.status().message()));
      return;  // a disk error: the next poll tries again
    }
    for (const std::string& result : *results) {
      const int64_t index = ResultIndex(result);
      if (index < 0 || static_cast<size_t>(index) >= lines.size() || progress.done[index]) continue;
      progress.done[index] = true;
      ++(file == ResultFile::kOutput ? progress.completed : progress.failed);
    }
  }
  for (const Line& line : lines) {
    if (!progress.done[line.index]) progress.pending.push_back(line.index);
  }
  if ((*batch)["status"] == "validating") {
    batch = store_->UpdateBatch(batch_id, [&](nlohmann::json& b) {
      if (b["status"] != "validating") return;  // cancelled meanwhile
      b["status"] = "in_progress";
      b["in_progress_at"] = Now();
      b["request_counts"]["total"] = lines.size();
    });
    if (!batch.ok()) return;
  }
  const std::string status = (*batch)["status"];
  Outcome outcome = Outcome::kAllRun;  // "finalizing": a crash came after the last line
  if (status == "cancelling") {
    outcome = Outcome::kCancelled;
  } else if (status == "in_progress") {
    outcome = RunLines(batch_id, lines, progress);
  }
  switch (outcome) {
    case Outcome::kStopped:
      return;
    case Outcome::kCancelled:
      return Finish(batch_id, lines, progress, "cancelled", "batch_cancelled");
    case Outcome::kExpired:
      return Finish(batch_id, lines, progress, "expired", "batch_expired");
    case Outcome::kAllRun:
      (void)store_->UpdateBatch(batch_id, [](nlohmann::json& b) {
        if (b["finalizing_at"].is_null()) b["finalizing_at"] = Now();
        b["status"] = "finalizing";
      });
      return Finish(batch_id, lines, progress, "completed", nullptr);
  }
}

BatchRunner::Outcome BatchRunner::RunLines(const std::string& batch_id,
                                           const std::vector<Line>& lines, Progress& progress) {
  while (true) {
    WriteFinished(batch_id, lines, progress);
    const nlohmann::json batch = store_->Batch(batch_id).value_or(nlohmann::json::object());
    const bool yield = store_->NextActiveBatch() != batch_id;  // another was cancelled
    std::unique_lock<std::mutex> lock(mu_);
    // Every line has its result written: none waits, runs, or has an answer not yet written.
    if (progress.pending.empty() && progress.running.empty() && progress.finished.empty())
      return Outcome::kAllRun;
    Outcome end = Outcome::kAllRun;
    if (stop_ || yield) {
      end = Outcome::kStopped;  // stopping, or a cancelled batch ends first; this one resumes
    } else if (batch.value("status", "") == "cancelling") {
      end = Outcome::kCancelled;
    } else if (Now() >= batch.value("expires_at", int64_t{0})) {
      end = Outcome::kExpired;
    }
    if (end != Outcome::kAllRun) {
      // Lines in flight are cancelled; what they answered is still written (a line cut short
      // runs again at the next start, or is listed as unrun). Cancel runs without mu_: a job
      // may finish, and its callback take mu_, inside it.
      std::vector<std::shared_ptr<EmbedJob>> jobs;
      for (auto& [index, job] : progress.running) {
        if (job) jobs.push_back(job);
      }
      lock.unlock();
      for (auto& job : jobs) job->Cancel();
      lock.lock();
      cv_.wait(lock, [&] { return progress.running.empty(); });
      lock.unlock();
      WriteFinished(batch_id, lines, progress);
      return end;
    }
    lock.unlock();
    SaveProgress(batch_id, lines.size(), progress, /*force=*/false);
    // Interactive calls first: start lines only while no door call is in flight.
    while (embedder_->active_calls() == 0) {
      lock.lock();
      if (progress.pending.empty() ||
          static_cast<int>(progress.running.size()) >= options_.lines_in_flight) {
        lock.unlock();
        break;
      }
      const size_t index = progress.pending.front();
      progress.pending.pop_front();
      lock.unlock();
      if (!StartLine(batch_id, lines[index], progress)) break;
    }
    lock.lock();
    cv_.wait_for(lock, absl::ToChronoMilliseconds(kBusyPoll),
                 [&] { return stop_ || !progress.finished.empty(); });
  }
}

bool BatchRunner::StartLine(const std::string& batch_id, const Line& line, Progress& progress) {
  if (!line.error.ok()) {
    Record(batch_id, line, line.error, progress);
    return true;
  }
  absl::StatusOr<ParsedEmbed> parsed = ParseOpenAiEmbed(line.body, embedder_->limits());
  if (!parsed.ok()) {
    Record(batch_id, line, parsed.status(), progress);
    return true;
  }
  parsed->call.deadline = absl::Now() + options_.line_timeout;
  parsed->call.priority = Priority::kBackground;  // only what interactive calls leave
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress.running[line.index] = nullptr;
  }
  const size_t index = line.index;
  auto job = embedder_->StartEmbed(
      std::move(parsed->call),
      [this, &progress, index, body = std::move(parsed->answer_body)](
          absl::StatusOr<EmbedAnswer> answer) {
        absl::StatusOr<std::string> result =
            answer.ok() ? absl::StatusOr<std::string>(body(*answer)) : answer.status();
        // Notified under the lock: once `running` is empty the runner may return and this
        // object go (a drain at SIGTERM), so nothing here may touch it after the lock is let go.
        std::lock_guard<std::mutex> lock(mu_);
        progress.running.erase(index);
        progress.finished.emplace_back(index, std::move(result));
        cv_.notify_all();
      });
  std::lock_guard<std::mutex> lock(mu_);
  if (job.ok()) {
    if (auto it = progress.running.find(index); it != progress.running.end()) it->second = *job;
    return true;
  }
  progress.running.erase(index);
  if (RunsAgain(job.status())) {
    progress.pending.push_front(index);  // the queue is full or the server drains: later
    return false;
  }
  progress.finished.emplace_back(index, job.status());
  return true;
}

void BatchRunner::WriteFinished(const std::string& batch_id, const std::vector<Line>& lines,
                                Progress& progress) {
  std::deque<std::pair<size_t, absl::StatusOr<std::string>>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished.swap(progress.finished);
  }
  for (auto& [index, result] : finished) Record(batch_id, lines[index], result, progress);
}

void BatchRunner::Record(const std::string& batch_id, const Line& line,
                         const absl::StatusOr<std::string>& result, Progress& progress) {
  if (!result.ok() && RunsAgain(result.status())) {
    std::lock_guard<std::mutex> lock(mu_);
    progress.pending.push_back(line.index);
    return;
  }
  const bool ok = result.ok();
  const std::string text =
      ok ? ResultLine(batch_id, line.index, line.custom_id, 200, *result)
         : ResultLine(batch_id, line.index, line.custom_id, HttpStatusOf(result.status()),
                      OpenAiErrorBody(result.status()));
  const absl::Status written =
      store_->AppendResult(batch_id, ok ? ResultFile::kOutput : ResultFile::kErrors, text);
  if (!written.ok()) {
    // Not written: the line is not done and runs again after the disk recovers.
    ServerLog(LogLevel::kError, absl::StrCat("batch ", batch_id, ": ", written.message()));
    std::lock_guard<std::mutex> lock(mu_);
    progress.pending.push_back(line.index);
    return;
  }
  progress.done[line.index] = true;
  ++(ok ? progress.completed : progress.failed);
  metrics_->ObserveBatchLine(ok ? "completed" : "failed");
}

void BatchRunner::SaveProgress(const std::string& batch_id, size_t total, Progress& progress,
                               bool force) {
  const int64_t finished = progress.completed + progress.failed;
  metrics_->SetBatchLinesPending(static_cast<int64_t>(total) - finished);
  if (!force && absl::Now() - progress.saved_at < kSaveEvery) return;
  progress.saved_at = absl::Now();
  (void)store_->UpdateBatch(batch_id, [&](nlohmann::json& b) {
    b["request_counts"] = {
        {"total", total}, {"completed", progress.completed}, {"failed", progress.failed}};
  });
}

void BatchRunner::Finish(const std::string& batch_id, const std::vector<Line>& lines,
                         Progress& progress, const char* status, const char* unrun_code) {
  for (const Line& line : lines) {
    if (progress.done[line.index] || unrun_code == nullptr) continue;
    const absl::Status written = store_->AppendResult(
        batch_id, ResultFile::kErrors, UnrunLine(batch_id, line.index, line.custom_id, unrun_code));
    if (!written.ok()) {
      ServerLog(LogLevel::kError, absl::StrCat("batch ", batch_id, ": ", written.message()));
      return;  // the next start finishes it
    }
    progress.done[line.index] = true;
    ++progress.failed;
    metrics_->ObserveBatchLine("failed");
  }
  absl::StatusOr<nlohmann::json> output = store_->PublishResults(batch_id, ResultFile::kOutput);
  absl::StatusOr<nlohmann::json> errors = store_->PublishResults(batch_id, ResultFile::kErrors);
  if (!output.ok() || !errors.ok()) {
    const absl::Status error = output.ok() ? errors.status() : output.status();
    ServerLog(LogLevel::kError, absl::StrCat("batch ", batch_id, ": ", error.message()));
    return;
  }
  SaveProgress(batch_id, lines.size(), progress, /*force=*/true);
  metrics_->SetBatchLinesPending(0);
  (void)store_->UpdateBatch(batch_id, [&](nlohmann::json& b) {
    b["status"] = status;
    b[absl::StrCat(status, "_at")] = Now();
    b["output_file_id"] = output->is_null() ? nlohmann::json() : (*output)["id"];
    b["error_file_id"] = errors->is_null() ? nlohmann::json() : (*errors)["id"];
  });
}

}  // namespace embedding::server
