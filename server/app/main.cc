// embedding_server: serves the EmbeddingService over gRPC (and the HTTP doors). Starts
// NOT_SERVING, loads the models, turns SERVING; on SIGTERM/SIGINT turns NOT_SERVING, refuses
// new calls, lets in-flight work finish within --drain-timeout-s, and exits 0. Exit 2 for a
// bad configuration, 1 when a listener or a model fails to start.
#include <signal.h>
#include <stdlib.h>

#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/freed_memory.h"
#include "server/app/server.h"
#include "server/app/server_options.h"
#include "server/observability/log_throttle.h"
#include "server/observability/server_log.h"

using embedding::server::LogLevel;
using embedding::server::ServerLog;

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // oneDNN keeps a compiled kernel per shape (1,024 by default), and each holds its own
  // scratch memory: 40 mixed documents on a MiniLM-shaped model grew the fp32 server by 180 MiB
  // against 69-96 MiB at 64, at the same speed (the encoder rounds its shapes so they repeat).
  // Read when oneDNN first runs, so set before any model loads; the environment may override.
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64", /*overwrite=*/0);
  embedding::ReleaseFreedMemoryPromptly();  // tcmalloc: see common/freed_memory.cc
  embedding::server::ThrottleProtobufLogs();

  absl::SetProgramUsageMessage(
      "Serves embeddings over gRPC. Example:\n  embedding_server --model=demo=/path/to/model");
  auto options = embedding::server::ParseServerOptions(argc, argv);
  if (!options.ok()) {
    ServerLog(LogLevel::kError, options.status().message());
    return 2;
  }
  auto server = embedding::server::Server::Create(*std::move(options));
  if (!server.ok()) {
    ServerLog(LogLevel::kError, server.status().message());
    return 2;
  }
  if (absl::Status started = (*server)->Start(); !started.ok()) {
    ServerLog(LogLevel::kError, started.message());
    return 1;
  }
  int signal = 0;
  sigwait(&stop_signals, &signal);
  ServerLog(LogLevel::kInfo, absl::StrCat("signal ", signal));
  (*server)->Drain();
  server->reset();
  ServerLog(LogLevel::kInfo, "stopped");
  return 0;
}
