// One log line per finished RPC, text or JSON, carrying the call's request id: the client's
// `x-request-id` when it sends a usable one, else a fresh one, returned to the client in the
// response's trailing metadata either way. Lines for failed calls are rate-limited (a caller can
// make as many as it likes); secrets never reach them (the record has no headers).
#pragma once

#include <iosfwd>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/call_observer.h"
#include "server/observability/log_throttle.h"
#include "server/observability/server_log.h"

namespace embedding::server {

enum class RequestLogLevel { kOff, kErrors, kAll };

// "off" | "errors" | "all"; INVALID_ARGUMENT naming --log-requests otherwise.
absl::StatusOr<RequestLogLevel> ParseRequestLogLevel(const std::string& name);

// The same id rule for every door: `offered` (a client's x-request-id) when it is 1-128 bytes of
// [A-Za-z0-9._-], else 16 random hex digits.
std::string AcceptRequestId(absl::string_view offered);

class RequestLog {
 public:
  // Writes to `out`, which must outlive the log.
  RequestLog(LogFormat format, RequestLogLevel level, std::ostream* out);

  // Writes `record` if the level asks for it: every call (kAll) or failed ones (kErrors). At most
  // 20 failed-call lines per second. Thread-safe.
  void Record(const CallRecord& record, absl::Time now = absl::Now());
  // The hook to give the Embedder: Record for every finished call.
  CallObserver Hooks();

 private:
  const LogFormat format_;
  const RequestLogLevel level_;
  std::ostream* const out_;
  LogThrottle error_throttle_{20, absl::Seconds(1)};
  std::mutex mu_;
};

}  // namespace embedding::server
