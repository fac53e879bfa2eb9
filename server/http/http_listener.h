// One HTTP(S) listener on cpp-httplib: the settings every listener of this server shares
// (no SO_REUSEPORT, a bounded worker pool, read timeouts, a body limit, optional TLS) and its
// thread. Both the probe/metrics endpoint and the OpenAI-compatible endpoint sit on one.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/security/bearer_auth.h"
#include "server/http/http_tls.h"

namespace embedding::server {

struct HttpListenerOptions {
  std::string address;    // "host:port"; port 0 picks a free one
  std::string flag;       // the flag that set it, for errors ("--http-listen")
  size_t workers = 32;
  size_t max_body_bytes = 64 << 10;
  HttpTlsCertificate* tls = nullptr;  // set: HTTPS; must outlive the listener
};

class HttpListener {
 public:
  // Creates the server, not yet listening: register routes on server() first. INVALID_ARGUMENT
  // naming the flag for an address that is not HOST:PORT.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Create(const HttpListenerOptions& options);
  // Stops listening and joins the thread (handlers in progress finish first).
  ~HttpListener();

  httplib::Server& server() { return *server_; }
  // Binds and serves on a thread of its own. UNAVAILABLE naming the flag when the address
  // cannot be bound (a port in use is a start-up error).
  absl::Status Start();
  int port() const { return port_; }

 private:
  HttpListener() = default;

  HttpListenerOptions options_;
  std::string host_;
  int requested_port_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// A bearer token from the Authorization header; otherwise 401 with WWW-Authenticate in `res`
// and the reason as plain text (never the token).
bool Authorized(const BearerAuth& auth, const httplib::Request& req, httplib::Response& res);

}  // namespace embedding::server
