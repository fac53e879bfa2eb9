// Starts a real embedding_server on 127.0.0.1 (port 0) for a test and stops it: SIGTERM, then
// SIGKILL if it does not exit in time. The binary is the build's, or EMBEDDING_SERVER_BIN.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace embedding::testing {

class ServerProcess {
 public:
  // Starts the server with `args` (plus --listen=127.0.0.1:0 --http-listen=127.0.0.1:0
  // --dtype=fp32 --dtype-cache-dir=off unless given) and waits until it prints "ready" or
  // exits. Check ok() afterwards.
  explicit ServerProcess(std::vector<std::string> args,
                         absl::Duration startup_timeout = absl::Seconds(60));
  // Stops the server if still running.
  ~ServerProcess();

  bool ok() const { return ready_; }
  const std::string& grpc_address() const { return grpc_address_; }
  const std::string& http_address() const { return http_address_; }
  // The OpenAI and TEI listener's, when started with --openai-listen.
  const std::string& api_address() const { return api_address_; }
  pid_t pid() const { return pid_; }

  // Sends `signal` to the server.
  void Signal(int signal) const;
  // Waits for exit; returns the exit code, or -1 (still running at timeout), or 128+signal.
  int Wait(absl::Duration timeout = absl::Seconds(60));
  // Everything the server wrote to stderr so far (for failure messages).
  std::string Log() const;
  // The server's peak resident set so far (VmHWM), in KiB; -1 when unknown.
  long PeakRssKib() const { return StatusKib("VmHWM:"); }
  // Its resident set now (VmRSS), in KiB; -1 when unknown.
  long RssKib() const { return StatusKib("VmRSS:"); }

 private:
  // A field of /proc/PID/status, such as "VmRSS:".
  long StatusKib(const std::string& field) const;

  pid_t pid_ = -1;
  int stdout_fd_ = -1;  // kept open: a closed pipe would kill the server on its next write
  bool ready_ = false;
  int exit_code_ = -1;
  std::string grpc_address_;
  std::string http_address_;
  std::string api_address_;
  std::string log_path_;
};

}  // namespace embedding::testing
