// embedding_server: serves the EmbeddingService over gRPC (and the HTTP doors). Starts
// NOT_SERVING, loads the models, turns SERVING; on SIGTERM/SIGINT turns NOT_SERVING, refuses
// new calls, lets in-flight work finish within --drain-timeout-s, and exits 0. Exit 2 for a
// bad configuration, 1 when a listener or a model fails to start.
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>

#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
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
  // Blocks of 8 MiB and more come from mmap and go back to the system when freed. glibc's own
  // threshold rises to 32 MiB after the first large free, and a long window's 16-75 MB tensors
  // then stay in the heap as fragments: one 8,190-token NomicBert-base window grew an fp32
  // server by 679-759 MiB at its peak, against 217 MiB at 8 MiB (195 at 1 MiB, 353 at 16 MiB).
  // 8 MiB keeps a 512-token batch's tensors (up to 6.3 MB at BERT-base width) on the heap, where
  // reusing them costs no page faults. MALLOC_MMAP_THRESHOLD_ in the environment overrides.
  if (getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 8 << 20);
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
