#include "tests/testing/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace embedding::testing {
namespace {

// The address the server printed after `marker`, up to the end of that line (text) or of
// the message (--log-format=json).
std::string AddressAfter(const std::string& output, const std::string& marker) {
  const size_t at = output.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return output.substr(start, output.find_first_of("\n\"", start) - start);
}

bool SaysReady(const std::string& output) {
  return absl::StrContains(output, "embedding_server: ready\n") ||
         absl::StrContains(output, "\"message\":\"ready\"");
}

}  // namespace

ServerProcess::ServerProcess(std::vector<std::string> args, absl::Duration startup_timeout) {
  const char* binary = std::getenv("EMBEDDING_SERVER_BIN");
  if (binary == nullptr) binary = EMB_SERVER_BIN;
  bool has_listen = false, has_http = false, has_dtype = false, has_dtype_cache = false;
  for (const auto& a : args) {
    has_listen |= absl::StartsWith(a, "--listen");
    has_http |= absl::StartsWith(a, "--http-listen") || absl::StartsWith(a, "--http_listen");
    has_dtype |= absl::StartsWith(a, "--dtype=");
    has_dtype_cache |= absl::StartsWith(a, "--dtype-cache-dir");
  }
  if (!has_listen) args.push_back("--listen=127.0.0.1:0");
  if (!has_http) args.push_back("--http-listen=127.0.0.1:0");
  // Tests compare vectors with fp32 references, so they pin the exact dtype (the server's
  // default, auto, may pick bf16 or int8 on this CPU), and keep nothing in the user's cache.
  if (!has_dtype) args.push_back("--dtype=fp32");
  if (!has_dtype_cache) args.push_back("--dtype-cache-dir=off");
  char log_template[] = "/tmp/embedding_server_log_XXXXXX";
  const int log_fd = mkstemp(log_template);
  log_path_ = log_template;
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return;

  pid_ = fork();
  if (pid_ == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    close(out_pipe[0]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary));
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary, argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(log_fd);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  std::string output;
  const absl::Time give_up = absl::Now() + startup_timeout;
  while (absl::Now() < give_up) {
    char buf[4096];
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n > 0) output.append(buf, n);
    if (SaysReady(output)) {
      ready_ = true;
      break;
    }
    int status;
    if (n == 0 || waitpid(pid_, &status, WNOHANG) == pid_) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  stdout_fd_ = out_pipe[0];
  grpc_address_ = AddressAfter(output, "grpc listening on ");
  http_address_ = AddressAfter(output, "http listening on ");
  api_address_ = AddressAfter(output, "openai listening on ");
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && exit_code_ < 0) {
    Signal(SIGTERM);
    if (Wait(absl::Seconds(20)) < 0) {
      kill(pid_, SIGKILL);
      Wait(absl::Seconds(5));
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void ServerProcess::Signal(int signal) const {
  if (pid_ > 0) kill(pid_, signal);
}

int ServerProcess::Wait(absl::Duration timeout) {
  if (exit_code_ >= 0) return exit_code_;
  const absl::Time give_up = absl::Now() + timeout;
  while (absl::Now() < give_up) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return -1;
}

long ServerProcess::StatusKib(const std::string& field) const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == field) {
      status >> value;
      break;
    }
  }
  return value;
}

std::string ServerProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace embedding::testing
