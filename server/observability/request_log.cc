#include "server/observability/request_log.h"

#include <ostream>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/quoted_value.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

constexpr size_t kMaxRequestId = 128;

bool UsableRequestId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxRequestId) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  }
  return true;
}

std::string FreshRequestId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x", rng());
}

}  // namespace

absl::StatusOr<RequestLogLevel> ParseRequestLogLevel(const std::string& name) {
  if (name == "off") return RequestLogLevel::kOff;
  if (name == "errors") return RequestLogLevel::kErrors;
  if (name == "all") return RequestLogLevel::kAll;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-requests=", QuotedValue(name), ": must be off, errors or all"));
}

std::string AcceptRequestId(absl::string_view offered) {
  return UsableRequestId(offered) ? std::string(offered) : FreshRequestId();
}

RequestLog::RequestLog(LogFormat format, RequestLogLevel level, std::ostream* out)
    : format_(format), level_(level), out_(out) {}

void RequestLog::Record(const CallRecord& record, absl::Time now) {
  const bool failed = record.code != absl::StatusCode::kOk;
  if (level_ == RequestLogLevel::kOff || (level_ == RequestLogLevel::kErrors && !failed)) return;
  int64_t suppressed = 0;
  if (failed && !error_throttle_.Allow(now, &suppressed)) return;
  // Messages are the server's own; user values in them are already quoted short.
  const std::string message = record.message.substr(0, 512);
  std::string line;
  if (format_ == LogFormat::kJson) {
    nlohmann::json json = {{"time", absl::FormatTime(absl::RFC3339_full, now, absl::UTCTimeZone())},
                           {"event", "rpc"},
                           {"method", record.method},
                           {"request_id", record.request_id},
                           {"code", absl::StatusCodeToString(record.code)},
                           {"seconds", record.seconds}};
    if (failed) json["message"] = message;
    if (suppressed > 0) json["suppressed_before"] = suppressed;
    // Invalid UTF-8 is replaced, never thrown on: a log line must not fail.
    line = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = absl::StrFormat("embedding_server: rpc %s request_id=%s code=%s seconds=%.6f",
                           record.method, record.request_id, absl::StatusCodeToString(record.code),
                           record.seconds);
    if (failed) absl::StrAppend(&line, " message=\"", message, "\"");
    if (suppressed > 0) absl::StrAppend(&line, " (", suppressed, " failed-call lines suppressed)");
  }
  // One write per line, its newline included: the server's own lines (ServerLog) go to the
  // same stream under no lock of ours, and `line << std::endl` was two writes, between which
  // one of them landed (two JSON objects on one line, then an empty line).
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  *out_ << line << std::flush;
}

CallObserver RequestLog::Hooks() {
  CallObserver hooks;
  hooks.on_call_done = [this](const CallRecord& call) { Record(call); };
  return hooks;
}

}  // namespace embedding::server
