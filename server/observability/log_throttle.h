// Rate limits for log lines a caller can trigger at will: each invalid-UTF-8 request made
// protobuf write one error line, so a client could fill the disk and bury real messages.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/time/time.h"

namespace embedding::server {

// At most `burst` lines per `period`; past that, lines are counted, and the next line let
// through says how many were suppressed. Thread-safe.
class LogThrottle {
 public:
  LogThrottle(int burst, absl::Duration period) : burst_(burst), period_(period) {}

  // Whether a line may be written now; if so, `*suppressed` is how many were dropped since the
  // last one written.
  bool Allow(absl::Time now, int64_t* suppressed);

 private:
  const int burst_;
  const absl::Duration period_;
  std::mutex mu_;
  absl::Time window_start_ = absl::InfinitePast();
  int in_window_ = 0;
  int64_t suppressed_ = 0;
};

// Routes protobuf's own log lines (parse failures a request can cause) through a LogThrottle
// of 5 lines per second to stderr.
void ThrottleProtobufLogs();

}  // namespace embedding::server
