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
                                           const std::string& model, size_t batch,
                                           absl::Duration floor) {
  CallBudget budget;
  budget.floor = floor;
  if (tasks.empty() || tasks.back().documents.empty()) return budget;
  const BucketTask& longest = tasks.back();
  const size_t count = std::clamp<size_t>(kProbeTokens / std::max<uint32_t>(1, longest.min_tokens),
                                          1, std::min(batch, longest.documents.size()));
  const std::vector<std::string> probe(longest.documents.begin(),
                                       longest.documents.begin() + count);
  EmbedOptions options;
  options.model = model;
  options.temperature = 1.0f;
  options.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;
  const auto start = std::chrono::steady_clock::now();
  auto response = client.Embed(MakeEmbedRequest(probe, options), floor);
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat("probe (", count, " ", longest.bucket,
                                     "-token documents): ", response.status().message(),
                                     "; raise --timeout-s"));
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
  std::string out = absl::StrFormat(
      "Plan: tau grid %s; the probe ran at %.0f tokens/s (%.1f bytes per token)\n"
      "%-10s %9s %14s %12s %10s\n",
      absl::StrJoin(grid, ", "), budget.tokens_per_second, budget.bytes_per_token, "bucket",
      "documents", "tokens per tau", "to do (tau)", "estimate");
  double total = 0;
  for (const BucketTask& task : tasks) {
    const size_t bytes = Bytes(task.documents) + Bytes(task.queries);
    size_t to_do = 0;
    for (float tau : grid)
      if (state == nullptr || state->Find(task.bucket, tau) == nullptr) ++to_do;
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
