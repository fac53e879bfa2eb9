// The operations side of the HTTP door: /metrics (Prometheus text format), /healthz (the
// process is up), /readyz (serving, with consistent admission books), POST /admin/reload
// (models, behind bearer auth), and GET /openapi.json and /docs (api_docs.h).
// prometheus-cpp's own exposer cannot start its threads once libtorch and OpenBLAS are
// loaded, so the text format is served here.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/core/model_reloader.h"
#include "server/core/worker_pool.h"
#include "server/http/api_docs.h"
#include "server/http/http_listener.h"
#include "server/http/http_tls.h"
#include "server/observability/metrics.h"
#include "server/security/bearer_auth.h"

namespace embedding::server {

struct HttpEndpointOptions {
  std::string address;  // "host:port"; port 0 picks a free one
  Metrics* metrics = nullptr;
  std::function<bool()> serving;  // tells /readyz
  // Bearer tokens (may be null; must outlive the endpoint). They always guard /admin/*, which
  // is refused without them; /metrics only with `auth_metrics`. The probes stay open.
  const BearerAuth* auth = nullptr;
  bool auth_metrics = false;
  // Set (--http-tls): HTTPS with this certificate, which must outlive the endpoint.
  HttpTlsCertificate* tls = nullptr;
  ApiDocs docs;  // GET /openapi.json and /docs
};

class HttpEndpoint {
 public:
  // Listens and serves. UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(HttpEndpointOptions options);
  int port() const { return listener_->port(); }
  // Where POST /admin/reload goes once models are loaded (until then it answers 503).
  // `reloader` must outlive the endpoint, or be unset (nullptr) before it goes.
  void SetReloader(ModelReloader* reloader) { reloader_.store(reloader); }

 private:
  HttpEndpoint() = default;

  std::atomic<ModelReloader*> reloader_{nullptr};
  // A reload blocks while a model loads: it runs here, never on the listener's thread.
  WorkerPool admin_{1};
  std::unique_ptr<HttpListener> listener_;  // last: stops first
};

}  // namespace embedding::server
