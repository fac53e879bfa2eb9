// The whole server as one object: its parts, the order they start in, and the order they stop
// in. Create checks the configuration (exit 2 in main when it fails); Start opens the
// listeners and loads the models (exit 1); Drain turns NOT_SERVING, refuses new calls and lets
// accepted work finish; destruction stops the rest. Member order is the shutdown order.
#pragma once

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "server/app/server_options.h"
#include "server/batch/batch_api.h"
#include "server/batch/batch_runner.h"
#include "server/batch/batch_store.h"
#include "server/core/embedder.h"
#include "server/core/model_registry.h"
#include "server/core/model_reloader.h"
#include "server/core/worker_pool.h"
#include "server/grpc/embedding_service.h"
#include "server/grpc/grpc_listener.h"
#include "server/http/api_endpoint.h"
#include "server/http/http_endpoint.h"
#include "server/http/http_tls.h"
#include "server/observability/device_utilization.h"
#include "server/observability/metrics.h"
#include "server/observability/request_log.h"
#include "server/security/bearer_auth.h"

namespace embedding::server {

class Server {
 public:
  // Checks what can be checked before anything listens: log flags, the bearer-token file, TLS
  // files. INVALID_ARGUMENT (or the loader's code) naming the flag.
  static absl::StatusOr<std::unique_ptr<Server>> Create(ServerOptions options);
  // Stops whatever still runs, in member order (Drain first for a graceful stop).
  ~Server();

  // Opens the gRPC, HTTP and OpenAI listeners (each logs "<name> listening on HOST:PORT" on
  // stdout), loads the models, starts watching them, and turns SERVING ("ready" on stdout).
  // UNAVAILABLE naming the flag of a listener that cannot bind; the loader's error for a model.
  absl::Status Start();
  // Turns NOT_SERVING and refuses new calls; waits up to --drain-timeout-s for accepted calls;
  // stops the gRPC listener and lets scheduled work reach the batchers.
  void Drain();

 private:
  explicit Server(ServerOptions options);
  absl::Status StartListeners();
  absl::Status LoadModels();
  // /readyz: serving, and admission's books consistent (else logged once).
  bool Ready();

  const ServerOptions options_;
  std::unique_ptr<BearerAuth> auth_;
  std::unique_ptr<HttpTlsCertificate> http_tls_;
  std::shared_ptr<grpc::ServerCredentials> grpc_credentials_;
  // Read by metrics_ at each scrape, so it outlives it; null on the CPU or without NVML.
  std::unique_ptr<NvmlUtilization> nvml_;
  Metrics metrics_;
  std::unique_ptr<RequestLog> request_log_;
  // Everything below runs completions that call into the Embedder: it goes after them.
  std::unique_ptr<Embedder> embedder_;
  // Every model call, loading included, runs on this one thread. LibTorch parallelises through
  // libgomp, which gives each thread that starts parallel work its own pool of threads and,
  // once pooled threads outnumber the CPUs, cuts their spin-waits to almost nothing: with the
  // model loaded on main and run on a batcher thread, a 128-token MiniLM-shaped forward took
  // 105-121 ms against 27-29 ms with both on one thread (tests/bench/encoder_bench measures
  // the latter). Outlives the registry, whose batchers call into it.
  std::unique_ptr<WorkerPool> inference_;
  // Tokenising, planning and merging. Outlives the registry: stopping a batcher posts the
  // last completions here.
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ModelRegistry> registry_;
  std::unique_ptr<ModelReloader> reloader_;
  // The Batch API (with --batch-dir): the runner's lines call into the registry, so it stops
  // before it; its routes' disk thread stops after the listener that feeds it.
  std::unique_ptr<BatchStore> batch_store_;
  std::unique_ptr<BatchRunner> batch_runner_;
  std::unique_ptr<BatchApi> batch_api_;
  std::unique_ptr<EmbeddingService> service_;
  std::unique_ptr<GrpcListener> grpc_;
  // The HTTP doors stop first: their handlers finish before what they use goes.
  std::unique_ptr<HttpEndpoint> http_;
  std::unique_ptr<ApiEndpoint> api_;
  std::atomic<bool> serving_{false};
  std::atomic<bool> reported_inconsistent_{false};
};

}  // namespace embedding::server
