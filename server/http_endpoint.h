// The HTTP side: /metrics (Prometheus text format), /healthz (the process is up) and
// /readyz (the gRPC health state is SERVING). cpp-httplib on its own threads; prometheus-cpp's
// own exposer cannot start its threads once libtorch and OpenBLAS are loaded.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/bearer_auth.h"
#include "server/metrics.h"

namespace httplib {
class Server;
}

namespace embedding::server {

class HttpEndpoint {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one). `serving` tells /readyz.
  // `metrics_auth` (may be null; must outlive the endpoint) guards /metrics with a bearer
  // token; the probes stay open. UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(const std::string& address,
                                                             Metrics* metrics,
                                                             std::function<bool()> serving,
                                                             const BearerAuth* metrics_auth);
  // Stops listening and joins the thread.
  ~HttpEndpoint();

  int port() const { return port_; }

 private:
  HttpEndpoint() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace embedding::server
