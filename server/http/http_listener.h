// One HTTP(S) listener, event-driven (Boost.Beast on Asio): a few threads serve every
// connection; a request waiting for its answer holds no thread, and a client that goes away
// meanwhile is noticed by the event loop. The settings every listener of this server shares:
// no SO_REUSEPORT, read timeouts, keep-alive bounds, a body limit, optional TLS with the
// rotating certificate. Both the probe/metrics endpoint and the OpenAI-compatible API sit on
// one.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/http/http_exchange.h"
#include "server/http/http_tls.h"

namespace embedding::server {

struct HttpListenerOptions {
  std::string address;  // "host:port"; port 0 picks a free one
  std::string flag;     // the flag that set it, for errors ("--http-listen")
  int threads = 1;      // event-loop threads
  size_t max_body_bytes = 64 << 10;
  HttpTlsCertificate* tls = nullptr;  // set: HTTPS; must outlive the listener
};

class HttpListener {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpExchange>)>;
  // The answer to a request the listener refuses itself: 404 (no route), 413 (body over the
  // limit), 400 (malformed). Given the status and the exchange (its body may be empty).
  using ErrorResponder = std::function<HttpResponse(int status, const HttpExchange& request)>;

  // Not yet listening: add routes first. INVALID_ARGUMENT naming the flag for an address that
  // is not HOST:PORT.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Create(const HttpListenerOptions& options);
  // Stops listening, closes every connection (handlers still holding an exchange may answer;
  // the answer goes nowhere) and joins the threads.
  ~HttpListener();

  // `handler` runs on a listener thread and must not block: it answers at once or hands the
  // exchange to work that answers later.
  void Route(const std::string& method, const std::string& path, Handler handler);
  // Serves every path that starts with `prefix` and has no route of its own, the longest
  // prefix first (paths with an id: "/v1/files/" serves /v1/files/{id}/content).
  void RoutePrefix(const std::string& method, const std::string& prefix, Handler handler);
  // Bodies of `method` on `path` may be up to `bytes` (an upload route), instead of
  // max_body_bytes.
  void SetBodyLimit(const std::string& method, const std::string& path, size_t bytes);
  void SetErrorResponder(ErrorResponder responder);

  // Binds and serves. UNAVAILABLE naming the flag when the address cannot be bound (a port in
  // use is a start-up error).
  absl::Status Start();
  int port() const { return port_; }

  struct State;  // the event loop, shared with its connections (http_listener.cc)

 private:
  HttpListener() = default;
  HttpListenerOptions options_;
  std::string host_;
  int requested_port_ = 0;
  int port_ = 0;
  std::shared_ptr<State> state_;
};

}  // namespace embedding::server
