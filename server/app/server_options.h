// Every server option, typed, parsed once from flags (with EMBEDDING_* environment
// fallbacks for containers) and validated once. Errors name the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/batch/batch_runner.h"
#include "server/batch/batch_store.h"
#include "server/core/batcher.h"
#include "server/core/core_options.h"
#include "server/security/tls_options.h"

namespace embedding::server {

// The Batch API's folder, bounds and pace; off while store.dir is empty.
struct BatchJobOptions {
  BatchStoreOptions store;
  BatchRunnerOptions runner;
};

struct ServerOptions {
  std::string grpc_listen = "0.0.0.0:50051";
  std::string http_listen = "0.0.0.0:8080";  // /metrics, /healthz, /readyz; empty disables
  std::string api_docs_dir;                  // swagger-ui-dist: GET /docs; empty: no page
  std::string openai_listen;                 // POST /v1/embeddings, GET /v1/models; empty disables
  absl::Duration openai_timeout = absl::Minutes(5);  // without an X-Request-Timeout header
  BatchJobOptions batch;
  ModelOptions models;
  BatcherOptions batching;
  RequestLimits limits;
  int tokenizer_threads = 2;
  TlsOptions tls;
  // Bearer tokens (bearer_auth.h); empty: no authentication.
  std::string auth_token_file;
  // Also require the token on /metrics (health probes stay open).
  bool auth_metrics = false;
  // gRPC server reflection (grpcurl, the Python reflection client).
  bool reflection = true;
  // The request log (request_log.h).
  std::string log_format = "text";
  std::string log_requests = "errors";
  // W: recent document vectors per collapse-metric series.
  int collapse_window = 512;
  absl::Duration drain_timeout = absl::Seconds(30);
};

// Parses argv (and EMBEDDING_<FLAG> variables for flags not given) into options.
// INVALID_ARGUMENT naming the flag and its allowed values.
absl::StatusOr<ServerOptions> ParseServerOptions(int argc, char** argv);

}  // namespace embedding::server
