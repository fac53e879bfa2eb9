#include "server/http_endpoint.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace embedding::server {

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& address,
                                                                  Metrics* metrics,
                                                                  std::function<bool()> serving) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen=", address, ": expected HOST:PORT"));
  }
  const std::string host = address.substr(0, colon);
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  endpoint->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *endpoint->server_;
  server.Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/readyz", [serving](const httplib::Request&, httplib::Response& res) {
    const bool ready = serving();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "SERVING\n" : "NOT_SERVING\n", "text/plain");
  });
  endpoint->port_ =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (endpoint->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("--http-listen=", address, ": cannot bind"));
  }
  endpoint->thread_ = std::thread([&server] { server.listen_after_bind(); });
  // This httplib has no wait_until_ready(); poll.
  for (int i = 0; i < 500 && !server.is_running(); ++i) absl::SleepFor(absl::Milliseconds(2));
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace embedding::server
