#include "server/http/http_endpoint.h"

#include <optional>
#include <string>

#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/http/api_call.h"

namespace embedding::server {
namespace {

// These routes take no body worth more.
constexpr size_t kHttpMaxBodyBytes = 64 << 10;

HttpResponse Text(int status, std::string body) {
  return HttpResponse{status, "text/plain", std::move(body), {}};
}

// OK when `auth` accepts the request's bearer token; otherwise the 401 answer (the reason as
// plain text, never the token) is sent and false returned.
bool Authorized(const BearerAuth& auth, HttpExchange& exchange) {
  const absl::Status allowed = Authorize(&auth, exchange);
  if (!allowed.ok())
    exchange.Respond(ErrorAnswer(401, "text/plain", std::string(allowed.message()) + "\n"));
  return allowed.ok();
}

// 200 with every model's outcome when none was refused; 422 when a new version was (the old
// one keeps serving); 404 for a model not served.
HttpResponse ReloadAnswer(const absl::StatusOr<std::vector<ReloadOutcome>>& outcomes) {
  if (!outcomes.ok()) {
    return Text(outcomes.status().code() == absl::StatusCode::kNotFound ? 404 : 500,
                std::string(outcomes.status().message()) + "\n");
  }
  nlohmann::json body = nlohmann::json::array();
  int status = 200;
  for (const ReloadOutcome& outcome : *outcomes) {
    nlohmann::json item = {{"model", outcome.model},
                           {"result", ReloadResultName(outcome.result)},
                           {"version", outcome.version}};
    if (!outcome.dtype.empty()) item["dtype"] = outcome.dtype;
    if (!outcome.dtype_kept_from.empty()) item["dtype_kept_from"] = outcome.dtype_kept_from;
    if (outcome.new_model) item["new_model"] = true;
    if (outcome.result == ReloadOutcome::Result::kFailed) {
      item["error"] = outcome.error;
      status = 422;
    }
    body.push_back(std::move(item));
  }
  // Replace: a model's error text may hold bytes that are not UTF-8 (file names).
  return HttpResponse{status,
                      "application/json",
                      body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                      {}};
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(HttpEndpointOptions options) {
  HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--http-listen";
  listen.max_body_bytes = kHttpMaxBodyBytes;
  listen.tls = options.tls;
  auto listener = HttpListener::Create(listen);
  if (!listener.ok()) return listener.status();
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  endpoint->listener_ = *std::move(listener);
  HttpListener& server = *endpoint->listener_;
  Metrics* metrics = options.metrics;
  const BearerAuth* metrics_auth = options.auth_metrics ? options.auth : nullptr;
  server.Route("GET", "/metrics", [metrics, metrics_auth](std::shared_ptr<HttpExchange> ex) {
    if (metrics_auth != nullptr && !Authorized(*metrics_auth, *ex)) return;
    ex->Respond({200, "text/plain; version=0.0.4; charset=utf-8", metrics->Render(), {}});
  });
  server.Route(
      "POST", "/admin/reload",
      [auth = options.auth, self = endpoint.get()](std::shared_ptr<HttpExchange> ex) {
        if (auth == nullptr)
          return ex->Respond(Text(403, "admin endpoints are off: they need --auth-token-file\n"));
        if (!Authorized(*auth, *ex)) return;
        ModelReloader* reloader = self->reloader_.load();
        if (reloader == nullptr)
          return ex->Respond(Text(503, "models are loading; retry shortly\n"));
        // dtype=keep|measure: under --dtype=auto, whether a new version keeps the serving
        // version's dtype or is measured again; absent: as --reload-dtype says.
        const std::string dtype = ex->QueryParam("dtype");
        if (!dtype.empty() && dtype != "keep" && dtype != "measure") {
          return ex->Respond(Text(400, "dtype: must be keep or measure\n"));
        }
        const std::optional<bool> measure =
            dtype.empty() ? std::nullopt : std::optional<bool>(dtype == "measure");
        self->admin_.Schedule([reloader, ex, measure] {
          ex->Respond(ReloadAnswer(reloader->ReloadNow(ex->QueryParam("model"), measure)));
        });
      });
  // Both listeners describe every route: the API listener is optional, this one is not.
  options.docs.AddRoutes(server);
  server.Route("GET", "/healthz",
               [](std::shared_ptr<HttpExchange> ex) { ex->Respond(Text(200, "ok\n")); });
  server.Route("GET", "/readyz",
               [serving = std::move(options.serving)](std::shared_ptr<HttpExchange> ex) {
                 const bool ready = serving();
                 ex->Respond(Text(ready ? 200 : 503, ready ? "SERVING\n" : "NOT_SERVING\n"));
               });
  RETURN_IF_ERROR(endpoint->listener_->Start());
  return endpoint;
}

}  // namespace embedding::server
