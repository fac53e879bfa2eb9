#include "server/observability/log_throttle.h"

#include <google/protobuf/stubs/logging.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/observability/server_log.h"

namespace embedding::server {

bool LogThrottle::Allow(absl::Time now, int64_t* suppressed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now - window_start_ >= period_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

namespace {

LogThrottle& ProtobufThrottle() {
  static auto* throttle = new LogThrottle(5, absl::Seconds(1));
  return *throttle;
}

void ThrottledProtobufLog(google::protobuf::LogLevel level, const char* filename, int line,
                          const std::string& message) {
  int64_t suppressed = 0;
  if (level < google::protobuf::LOGLEVEL_WARNING ||
      !ProtobufThrottle().Allow(absl::Now(), &suppressed)) {
    return;
  }
  std::string text = absl::StrCat("protobuf ", filename, ":", line, ": ", message);
  if (suppressed > 0) absl::StrAppend(&text, " (", suppressed, " similar lines suppressed)");
  ServerLog(LogLevel::kWarning, text);
}

}  // namespace

void ThrottleProtobufLogs() { google::protobuf::SetLogHandler(&ThrottledProtobufLog); }

}  // namespace embedding::server
