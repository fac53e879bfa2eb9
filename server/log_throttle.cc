#include "server/log_throttle.h"

#include <google/protobuf/stubs/logging.h>

#include <iostream>

#include "absl/time/clock.h"

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
  std::cerr << "embedding_server: protobuf " << filename << ":" << line << ": " << message;
  if (suppressed > 0) std::cerr << " (" << suppressed << " similar lines suppressed)";
  std::cerr << std::endl;
}

}  // namespace

void ThrottleProtobufLogs() { google::protobuf::SetLogHandler(&ThrottledProtobufLog); }

}  // namespace embedding::server
