#include "server/http_endpoint.h"

#include <httplib.h>
#include <sys/socket.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

// 32 workers: a probe, a scrape and their retries never wait behind a few stalled clients;
// idle workers cost ~8 KiB of stack each until used.
constexpr size_t kHttpWorkers = 32;
// A stalled request frees its worker after 2 s; a Prometheus scrape or probe sends its whole
// request at once.
constexpr time_t kHttpReadTimeoutSeconds = 2;
constexpr size_t kHttpKeepAliveRequests = 100;
constexpr size_t kHttpMaxBodyBytes = 64 << 10;

// A bearer token from the Authorization header, or 401 in `res`.
bool Authorized(const BearerAuth& auth, const httplib::Request& req, httplib::Response& res) {
  const absl::Status allowed = auth.Check(req.get_header_value("Authorization"));
  if (allowed.ok()) return true;
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(std::string(allowed.message()) + "\n", "text/plain");
  return false;
}

// 200 with every model's outcome when none was refused; 422 when a new version was (the old
// one keeps serving); 404 for a model not served.
void AnswerReload(const absl::StatusOr<std::vector<ReloadOutcome>>& outcomes,
                  httplib::Response& res) {
  if (!outcomes.ok()) {
    res.status = outcomes.status().code() == absl::StatusCode::kNotFound ? 404 : 500;
    res.set_content(std::string(outcomes.status().message()) + "\n", "text/plain");
    return;
  }
  nlohmann::json body = nlohmann::json::array();
  res.status = 200;
  for (const ReloadOutcome& outcome : *outcomes) {
    nlohmann::json item = {{"model", outcome.model},
                           {"result", ReloadResultName(outcome.result)},
                           {"version", outcome.version}};
    if (outcome.result == ReloadOutcome::Result::kFailed) {
      item["error"] = outcome.error;
      res.status = 422;
    }
    body.push_back(std::move(item));
  }
  // Replace: a model's error text may hold bytes that are not UTF-8 (file names).
  res.set_content(body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "application/json");
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(HttpEndpointOptions options) {
  const std::string& address = options.address;
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen=", address, ": expected HOST:PORT"));
  }
  const std::string host = address.substr(0, colon);
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  if (options.tls != nullptr) {
    endpoint->server_ = std::make_unique<httplib::SSLServer>([tls = options.tls](SSL_CTX& ctx) {
      tls->Install(ctx);
      return true;
    });
  } else {
    endpoint->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *endpoint->server_;
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT let a second server bind the same port
  // and take half the probes. A port in use is a start-up error.
  server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Slow clients: each connection holds a worker only until its read times out, and there are
  // more workers than a handful of stalled connections (10 partial-header connections blacked
  // out /healthz behind httplib's 8 default workers). Bodies: these routes take none.
  server.new_task_queue = [] { return new httplib::ThreadPool(kHttpWorkers); };
  server.set_read_timeout(kHttpReadTimeoutSeconds, 0);
  server.set_write_timeout(kHttpReadTimeoutSeconds, 0);
  server.set_keep_alive_max_count(kHttpKeepAliveRequests);
  server.set_payload_max_length(kHttpMaxBodyBytes);
  Metrics* metrics = options.metrics;
  const BearerAuth* metrics_auth = options.auth_metrics ? options.auth : nullptr;
  server.Get("/metrics", [metrics, metrics_auth](const httplib::Request& req,
                                                 httplib::Response& res) {
    if (metrics_auth != nullptr && !Authorized(*metrics_auth, req, res)) return;
    res.set_content(metrics->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Post("/admin/reload", [auth = options.auth, self = endpoint.get()](
                                   const httplib::Request& req, httplib::Response& res) {
    if (auth == nullptr) {
      res.status = 403;
      res.set_content("admin endpoints are off: they need --auth-token-file\n", "text/plain");
      return;
    }
    if (!Authorized(*auth, req, res)) return;
    ModelReloader* reloader = self->reloader_.load();
    if (reloader == nullptr) {
      res.status = 503;
      res.set_content("models are loading; retry shortly\n", "text/plain");
      return;
    }
    AnswerReload(reloader->ReloadNow(req.get_param_value("model")), res);
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/readyz", [serving = std::move(options.serving)](const httplib::Request&, httplib::Response& res) {
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
