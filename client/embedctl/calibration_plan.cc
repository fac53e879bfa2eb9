#include "client/embedctl/calibration_plan.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace embedding::client {
namespace {

size_t Bytes(const std::vector<std::string>& texts) {
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();
  return bytes;
}

std::string Duration(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.0f s", seconds);
  if (seconds < 7200) return absl::StrFormat("%.0f min", seconds / 60);
  return absl::StrFormat("%.1f h", seconds / 3600);
}

// The grid's τ that `state` does not hold for `task` (all of them without a state).
size_t TausToDo(const BucketTask& task, const std::vector<float>& grid,
                const CalibrationState* state) {
  size_t to_do = 0;
  for (float tau : grid)
    if (state == nullptr || state->Find(task.bucket, tau) == nullptr) ++to_do;
  return to_do;
}

}  // namespace

double CallBudget::SecondsFor(size_t bytes) const {
  if (tokens_per_second <= 0 || bytes_per_token <= 0) return 0;
  return static_cast<double>(bytes) / bytes_per_token / tokens_per_second;
}

absl::Duration CallBudget::DeadlineFor(size_t bytes) const {
  return std::max(floor, absl::Seconds(4 * SecondsFor(bytes)));
}

absl::StatusOr<CallBudget> ProbeCallBudget(EmbeddingClient& client,
                                           const std::vector<BucketTask>& tasks,
                                           const std::vector<float>& grid,
                                           const CalibrationState* state, const std::string& model,
                                           size_t batch, absl::Duration floor) {
  CallBudget budget;
  budget.floor = floor;
  const BucketTask* longest = nullptr;
  for (const BucketTask& task : tasks)
    if (!task.documents.empty() && TausToDo(task, grid, state) > 0) longest = &task;
  if (longest == nullptr) return budget;
  // Counted before anything is embedded, so that the call stays inside its bound.
  std::vector<std::string> probe;
  for (const std::string& document : longest->documents) {
    if (probe.size() >= std::max<size_t>(1, batch)) break;
    v1::TokenizeRequest request;
    request.set_model(model);
    request.add_inputs(document);
    request.set_add_special_tokens(true);
    auto tokenized = client.Tokenize(request);
    if (!tokenized.ok()) {
      return absl::Status(tokenized.status().code(),
                          absl::StrCat("probe: ", tokenized.status().message()));
    }
    const uint64_t tokens = static_cast<uint64_t>(tokenized->inputs(0).tokens_size());
    if (!probe.empty() && budget.probe_tokens + tokens > kProbeTokens) break;
    probe.push_back(document);
    budget.probe_tokens += tokens;
  }
  budget.probe_bucket = longest->bucket;
  budget.probe_documents = probe.size();
  EmbedOptions options;
  options.model = model;
  options.temperature = 1.0f;
  options.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;
  const auto start = std::chrono::steady_clock::now();
  auto response = client.Embed(MakeEmbedRequest(probe, options), floor);
  if (!response.ok()) {
    return absl::Status(
        response.status().code(),
        absl::StrCat("probe (", probe.size(), " ", longest->bucket,
                     "-token documents): ", response.status().message(), "; raise --timeout-s"));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double tokens = 0;
  for (const auto& document : response->documents()) tokens += document.token_count();
  tokens = std::max(tokens, 1.0);
  budget.tokens_per_second = tokens / std::max(seconds, 1e-3);
  budget.bytes_per_token = static_cast<double>(Bytes(probe)) / tokens;
  return budget;
}

std::string FormatCalibrationPlan(const std::vector<BucketTask>& tasks,
                                  const std::vector<float>& grid, const CallBudget& budget,
                                  const CalibrationState* state) {
  std::string out = absl::StrFormat("Plan: tau grid %s; ", absl::StrJoin(grid, ", "));
  if (budget.probe_documents == 0) {
    out += "nothing left to embed (--state-file holds every bucket and tau), so no probe\n";
  } else {
    absl::StrAppendFormat(&out,
                          "the probe (%d %s-token documents, %d tokens) ran at %.0f tokens/s "
                          "(%.1f bytes per token)\n",
                          budget.probe_documents, budget.probe_bucket, budget.probe_tokens,
                          budget.tokens_per_second, budget.bytes_per_token);
  }
  absl::StrAppendFormat(&out, "%-10s %9s %14s %12s %10s\n", "bucket", "documents", "tokens per tau",
                        "to do (tau)", "estimate");
  double total = 0;
  for (const BucketTask& task : tasks) {
    const size_t bytes = Bytes(task.documents) + Bytes(task.queries);
    const size_t to_do = TausToDo(task, grid, state);
    const double seconds = budget.SecondsFor(bytes) * static_cast<double>(to_do);
    total += seconds;
    absl::StrAppendFormat(&out, "%-10s %9d %14.0f %12d %10s\n", task.bucket, task.documents.size(),
                          budget.bytes_per_token > 0 ? bytes / budget.bytes_per_token : 0.0, to_do,
                          Duration(seconds));
  }
  absl::StrAppendFormat(&out,
                        "about %s in all; --max-bucket, --docs-per-bucket and --temperatures "
                        "trim it, --resume continues a run that stopped\n",
                        Duration(total));
  return out;
}

}  // namespace embedding::client
