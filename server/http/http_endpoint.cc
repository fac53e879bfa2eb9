#include "server/http/http_endpoint.h"

#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

// 32 workers: a probe, a scrape and their retries never wait behind a few stalled clients;
// idle workers cost ~8 KiB of stack each until used.
constexpr size_t kHttpWorkers = 32;
// These routes take no body worth more.
constexpr size_t kHttpMaxBodyBytes = 64 << 10;

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
    if (outcome.new_model) item["new_model"] = true;
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
  HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--http-listen";
  listen.workers = kHttpWorkers;
  listen.max_body_bytes = kHttpMaxBodyBytes;
  listen.tls = options.tls;
  auto listener = HttpListener::Create(listen);
  if (!listener.ok()) return listener.status();
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  endpoint->listener_ = *std::move(listener);
  httplib::Server& server = endpoint->listener_->server();
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
  RETURN_IF_ERROR(endpoint->listener_->Start());
  return endpoint;
}

}  // namespace embedding::server
