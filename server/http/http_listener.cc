#include "server/http/http_listener.h"

#include <sys/socket.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace embedding::server {
namespace {

// A stalled request frees its worker after 2 s; probes, scrapes and API clients send their
// whole request at once.
constexpr time_t kReadTimeoutSeconds = 2;
constexpr size_t kKeepAliveRequests = 100;

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Create(
    const HttpListenerOptions& options) {
  const size_t colon = options.address.rfind(':');
  std::unique_ptr<HttpListener> listener(new HttpListener());
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(options.address.substr(colon + 1), &listener->requested_port_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.flag, "=", options.address, ": expected HOST:PORT"));
  }
  listener->options_ = options;
  listener->host_ = options.address.substr(0, colon);
  if (options.tls != nullptr) {
    listener->server_ =
        std::make_unique<httplib::SSLServer>([tls = options.tls](SSL_CTX& ctx) {
          tls->Install(ctx);
          return true;
        });
  } else {
    listener->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *listener->server_;
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT let a second server bind the same port
  // and take half the requests. A port in use is a start-up error.
  server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Slow clients: each connection holds a worker only until its read times out, and there are
  // more workers than a handful of stalled connections (10 partial-header connections blacked
  // out /healthz behind httplib's 8 default workers).
  const size_t workers = options.workers;
  server.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  server.set_read_timeout(kReadTimeoutSeconds, 0);
  server.set_write_timeout(kReadTimeoutSeconds, 0);
  server.set_keep_alive_max_count(kKeepAliveRequests);
  server.set_payload_max_length(options.max_body_bytes);
  return listener;
}

absl::Status HttpListener::Start() {
  httplib::Server& server = *server_;
  port_ = requested_port_ == 0
              ? server.bind_to_any_port(host_)
              : (server.bind_to_port(host_, requested_port_) ? requested_port_ : -1);
  if (port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat(options_.flag, "=", options_.address, ": cannot bind"));
  }
  thread_ = std::thread([&server] { server.listen_after_bind(); });
  // This httplib has no wait_until_ready(); poll.
  for (int i = 0; i < 500 && !server.is_running(); ++i) absl::SleepFor(absl::Milliseconds(2));
  return absl::OkStatus();
}

HttpListener::~HttpListener() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

bool Authorized(const BearerAuth& auth, const httplib::Request& req, httplib::Response& res) {
  const absl::Status allowed = auth.Check(req.get_header_value("Authorization"));
  if (allowed.ok()) return true;
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(std::string(allowed.message()) + "\n", "text/plain");
  return false;
}

}  // namespace embedding::server
