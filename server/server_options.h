// Every server option, typed, parsed once from flags (with EMBEDDING_* environment
// fallbacks for containers) and validated once. Errors name the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_store/encoder.h"
#include "server/batcher.h"
#include "server/embed_params.h"

namespace embedding::server {

struct ModelSource {
  std::string name;
  std::string directory;
};

struct ModelOptions {
  std::vector<ModelSource> sources;  // --model NAME=DIR (repeatable) and --model-store DIR
  std::string store;  // --model-store: subdirectories that appear later are served too
  std::string default_model;         // empty: the first model
  model_store::ComputeDType dtype = model_store::ComputeDType::kFloat32;
  int intra_op_threads = 0;  // 0: all cores
  // Loaded versions per model after a reload: the current one and those before it, for
  // "name@version" (--model-versions-kept).
  size_t versions_kept = 2;
  // How often model directories are checked for a new version; zero: only on an admin call.
  absl::Duration poll_interval = absl::Seconds(30);
};

struct RequestLimits {
  int64_t max_concurrent_requests = 256;
  int64_t max_queued_tokens = 1 << 20;
  uint32_t max_inputs_per_request = 512;
  int64_t max_request_bytes = 32 << 20;
  uint32_t max_tokens_per_document = 131072;
  float min_temperature = 0.05f;
  float max_temperature = 4.0f;
  float default_temperature = 1.0f;
  Strategy default_strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MEAN;
};

// TLS on the gRPC listener (tls_credentials.h). Empty certificate and key: plaintext.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // set: mTLS, every client presents a certificate it signed
  unsigned reload_interval_s = 60;
  bool http = false;  // --http-tls: the HTTP listener serves HTTPS with the same pair
};

struct ServerOptions {
  std::string grpc_listen = "0.0.0.0:50051";
  std::string http_listen = "0.0.0.0:8080";  // /metrics, /healthz, /readyz; empty disables
  std::string openai_listen;  // POST /v1/embeddings, GET /v1/models; empty disables
  absl::Duration openai_timeout = absl::Minutes(5);  // without an X-Request-Timeout header
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
