#include "server/http/http_listener.h"

#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace embedding::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// An idle keep-alive connection, or one sending its headers, is closed after 5 s (cpp-httplib's
// keep-alive default, which this listener replaced); a stalled body after 2 s without a byte.
// Waiting connections cost no thread, only their socket and buffers.
constexpr auto kIdleTimeout = std::chrono::seconds(5);
constexpr auto kReadTimeout = std::chrono::seconds(2);
// Answers can be large (every chunk vector of a long document): bounded, but generously.
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr unsigned kKeepAliveRequests = 100;
constexpr uint32_t kMaxHeaderBytes = 64 << 10;
constexpr unsigned char kTlsAlertRecord = 0x15;
// After refusing a request mid-body, what the client still sends is read and dropped for up to
// this long before the connection closes, so the client reads the refusal instead of a reset
// (or SIGPIPE) while it is still writing.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr size_t kLingerBufferBytes = 16 << 10;

class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the socket at once, aborting what is pending (the listener is stopping).
  virtual void Abort() = 0;
};

}  // namespace

struct HttpListener::State {
  net::io_context ioc;
  std::optional<ssl::context> tls;
  std::optional<tcp::acceptor> acceptor;
  std::map<std::pair<std::string, std::string>, Handler> routes;
  std::map<std::pair<std::string, std::string>, Handler> prefix_routes;
  std::map<std::pair<std::string, std::string>, size_t> body_limits;
  size_t largest_route_body_bytes = 0;  // of body_limits
  ErrorResponder errors;
  size_t max_body_bytes = 0;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::mutex mu;  // guards what follows
  bool stopped = false;
  std::vector<std::weak_ptr<Connection>> connections;
  size_t prune_at = 64;
};

namespace {

using State = HttpListener::State;

// The exact route of the request, else the longest prefix route that matches; null if none.
const HttpListener::Handler* FindRoute(const State& state, const HttpExchange& exchange) {
  auto exact = state.routes.find({exchange.method(), exchange.path()});
  if (exact != state.routes.end()) return &exact->second;
  const HttpListener::Handler* best = nullptr;
  size_t best_length = 0;
  for (const auto& [key, handler] : state.prefix_routes) {
    if (key.first == exchange.method() && key.second.size() > best_length &&
        exchange.path().compare(0, key.second.size(), key.second) == 0) {
      best = &handler;
      best_length = key.second.size();
    }
  }
  return best;
}

// One connection: reads requests (keep-alive), hands each to its route, writes the answer when
// the route gives it, and while waiting watches the socket for the client's close. Every step
// runs on the connection's strand.
template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(std::shared_ptr<State> state, tcp::socket socket)
      : state_(std::move(state)), stream_(MakeStream(std::move(socket))) {}

  void Run() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Lowest().expires_after(kIdleTimeout);
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->Close();
          self->ReadHeader();
        });
      } else {
        self->ReadHeader();
      }
    });
  }

  void Abort() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      self->closed_ = true;
      self->Lowest().close();
    });
  }

 private:
  Stream MakeStream(tcp::socket socket) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *state_->tls);
    } else {
      return Stream(std::move(socket));
    }
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(std::max(state_->max_body_bytes, state_->largest_route_body_bytes));
    Lowest().expires_after(kIdleTimeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // A read that failed: 413 past the body limit, 400 for a malformed request; otherwise (the
  // client closed, reset or stalled) the connection just closes.
  void OnReadError(beast::error_code ec) {
    const auto& http_errors = http::make_error_code(http::error::bad_target).category();
    if (ec == http::error::body_limit) return Refuse(413);
    if (ec.category() == http_errors && ec != http::error::end_of_stream &&
        ec != http::error::partial_message)
      return Refuse(400);
    Close();
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    // The header was read under the largest limit of any route; this route's own applies now:
    // a declared length at once, a chunked body as it arrives.
    const beast::string_view target = parser_->get().target();
    const std::pair<std::string, std::string> key{
        std::string(parser_->get().method_string()),
        std::string(target.substr(0, target.find('?')))};
    auto route_limit = state_->body_limits.find(key);
    const size_t limit = route_limit == state_->body_limits.end() ? state_->max_body_bytes
                                                                   : route_limit->second;
    if (parser_->content_length() && *parser_->content_length() > limit) return Refuse(413);
    parser_->body_limit(limit);
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                     parser_->get().version());
      Lowest().expires_after(kReadTimeout);
      return http::async_write(
          stream_, *cont, [self = this->shared_from_this(), cont](beast::error_code ec, size_t) {
            if (ec) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    Lowest().expires_after(kReadTimeout);
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) return self->OnReadError(ec);
                            self->ReadBody();
                          });
  }

  // The request as an exchange whose answer comes back to this connection.
  std::shared_ptr<HttpExchange> MakeExchange(std::string body) {
    auto& request = parser_->get();
    version_ = request.version();
    const beast::string_view target = request.target();
    HttpExchange::Headers headers;  // only those a route reads: nothing calls back in here
    for (const char* name : HttpExchange::kRouteHeaders) {
      auto it = request.find(name);
      if (it != request.end()) headers.emplace_back(name, std::string(it->value()));
    }
    auto send = [self = this->shared_from_this()](HttpResponse response) {
      std::lock_guard<std::mutex> lock(self->state_->mu);
      if (self->state_->stopped) return;  // the loop is gone; nobody would write it
      net::post(self->stream_.get_executor(),
                [self, response = std::move(response)]() mutable { self->Write(response); });
    };
    return std::make_shared<HttpExchange>(std::string(request.method_string()), std::string(target),
                                          std::move(body), std::move(headers), std::move(send));
  }

  void Dispatch() {
    auto& request = parser_->get();
    keep_alive_ = request.keep_alive() && ++served_ < kKeepAliveRequests;
    auto exchange = MakeExchange(std::move(request.body()));
    const HttpListener::Handler* handler = FindRoute(*state_, *exchange);
    if (handler == nullptr) {
      exchange->Respond(state_->errors(404, *exchange));
      return;
    }
    exchange_ = exchange;
    awaiting_ = true;
    Watch();
    (*handler)(std::move(exchange));
  }

  // Refuses the request being read with `status` and closes after the answer.
  void Refuse(int status) {
    if (!parser_->is_header_done()) version_ = 11;
    keep_alive_ = false;
    linger_ = true;
    auto exchange = MakeExchange("");
    exchange->Respond(state_->errors(status, *exchange));
  }

  // Until the answer is written: readable with nothing to read is the client's close.
  void Watch() {
    Lowest().socket().async_wait(
        tcp::socket::wait_read,
        [self = this->shared_from_this()](beast::error_code ec) { self->OnReadable(ec); });
  }

  void OnReadable(beast::error_code ec) {
    if (ec || !awaiting_) return;  // cancelled by the answer, or closed
    unsigned char first = 0;
    const ssize_t n = ::recv(Lowest().socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Watch();
    // Data is a pipelined next request, read after the answer; over TLS a close_notify alert
    // comes first as data.
    const bool closed = n <= 0 || (kTls && first == kTlsAlertRecord);
    if (!closed) return;
    awaiting_ = false;
    if (auto exchange = exchange_.lock()) exchange->Disconnected();
    Close();
  }

  void Write(HttpResponse& answer) {
    const bool was_awaiting = awaiting_;
    awaiting_ = false;
    exchange_.reset();
    if (closed_) return;
    if (was_awaiting) {
      beast::error_code ignored;
      Lowest().socket().cancel(ignored);  // the watch
    }
    response_.emplace(static_cast<http::status>(answer.status), version_);
    response_->set(http::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response_->set(name, value);
    response_->keep_alive(keep_alive_);
    response_->body() = std::move(answer.body);
    response_->prepare_payload();
    Lowest().expires_after(kWriteTimeout);
    http::async_write(stream_, *response_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        self->response_.reset();
                        if (!ec && self->linger_) return self->Linger();
                        if (ec || !self->keep_alive_) return self->Close();
                        self->ReadHeader();
                      });
  }

  // Reads and drops what the client still sends, until it stops or kLingerTimeout passes.
  void Linger() {
    closed_ = true;
    if constexpr (!kTls) {
      beast::error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    discard_ = std::make_unique<char[]>(kLingerBufferBytes);
    Lowest().expires_after(kLingerTimeout);
    DiscardSome();
  }
  void DiscardSome() {
    stream_.async_read_some(net::buffer(discard_.get(), kLingerBufferBytes),
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Lowest().close();
                              self->DiscardSome();
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if constexpr (kTls) {
      Lowest().expires_after(std::chrono::seconds(1));
      stream_.async_shutdown(
          [self = this->shared_from_this()](beast::error_code) { self->Lowest().close(); });
    } else {
      beast::error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      Lowest().close();
    }
  }

  const std::shared_ptr<State> state_;  // first: the loop outlives the stream
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  std::weak_ptr<HttpExchange> exchange_;
  std::unique_ptr<char[]> discard_;  // while lingering
  unsigned version_ = 11;
  unsigned served_ = 0;
  bool keep_alive_ = false;
  bool awaiting_ = false;
  bool linger_ = false;
  bool closed_ = false;
};

void Accept(const std::shared_ptr<State>& state) {
  state->acceptor->async_accept(
      net::make_strand(state->ioc), [state](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted) return;  // stopping
        if (!ec) {
          std::shared_ptr<Connection> connection;
          {
            std::lock_guard<std::mutex> lock(state->mu);
            if (state->stopped) return;
            if (state->tls) {
              auto session = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
                  state, std::move(socket));
              session->Run();
              connection = session;
            } else {
              auto session = std::make_shared<Session<beast::tcp_stream>>(state, std::move(socket));
              session->Run();
              connection = session;
            }
            // Forget closed connections whenever the list doubles, so it tracks the open ones.
            auto& all = state->connections;
            if (all.size() >= state->prune_at) {
              all.erase(
                  std::remove_if(all.begin(), all.end(), [](const auto& c) { return c.expired(); }),
                  all.end());
              state->prune_at = std::max<size_t>(64, 2 * all.size());
            }
            all.push_back(connection);
          }
        }
        Accept(state);
      });
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Create(
    const HttpListenerOptions& options) {
  const size_t colon = options.address.rfind(':');
  std::unique_ptr<HttpListener> listener(new HttpListener());
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(options.address.substr(colon + 1), &listener->requested_port_) ||
      listener->requested_port_ < 0 || listener->requested_port_ > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.flag, "=", options.address, ": expected HOST:PORT"));
  }
  listener->options_ = options;
  listener->host_ = options.address.substr(0, colon);
  if (listener->host_.size() > 2 && listener->host_.front() == '[')  // [::1]
    listener->host_ = listener->host_.substr(1, listener->host_.size() - 2);
  auto state = std::make_shared<State>();
  state->max_body_bytes = options.max_body_bytes;
  state->errors = [](int status, const HttpExchange&) {
    return HttpResponse{status, "text/plain", absl::StrCat("HTTP ", status, "\n"), {}};
  };
  if (options.tls != nullptr) {
    state->tls.emplace(ssl::context::tls_server);
    state->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                            ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                            ssl::context::no_tlsv1_1 | ssl::context::no_compression);
    options.tls->Install(*state->tls->native_handle());
  }
  listener->state_ = std::move(state);
  return listener;
}

void HttpListener::Route(const std::string& method, const std::string& path, Handler handler) {
  state_->routes[{method, path}] = std::move(handler);
}

void HttpListener::RoutePrefix(const std::string& method, const std::string& prefix,
                               Handler handler) {
  state_->prefix_routes[{method, prefix}] = std::move(handler);
}

void HttpListener::SetBodyLimit(const std::string& method, const std::string& path, size_t bytes) {
  state_->body_limits[{method, path}] = bytes;
  state_->largest_route_body_bytes = std::max(state_->largest_route_body_bytes, bytes);
}

void HttpListener::SetErrorResponder(ErrorResponder responder) {
  state_->errors = std::move(responder);
}

absl::Status HttpListener::Start() {
  auto cannot_bind = [this](const beast::error_code& ec) {
    return absl::UnavailableError(
        absl::StrCat(options_.flag, "=", options_.address, ": cannot bind (", ec.message(), ")"));
  };
  beast::error_code ec;
  tcp::resolver resolver(state_->ioc);
  auto endpoints = resolver.resolve(host_, std::to_string(requested_port_),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) return cannot_bind(ec);
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  tcp::acceptor& acceptor = state_->acceptor.emplace(state_->ioc);
  acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR only (never SO_REUSEPORT): a second server on the same port must fail here,
  // not take half the requests.
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return cannot_bind(ec);
  port_ = acceptor.local_endpoint().port();
  Accept(state_);
  state_->work.emplace(state_->ioc.get_executor());
  for (int i = 0; i < std::max(1, options_.threads); ++i)
    state_->threads.emplace_back([state = state_.get()] { state->ioc.run(); });
  return absl::OkStatus();
}

HttpListener::~HttpListener() {
  if (!state_) return;
  std::vector<std::weak_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopped = true;
    connections.swap(state_->connections);
  }
  if (state_->threads.empty()) {
    // Never started: nothing runs and nothing is pending but a possible bound acceptor.
    if (state_->acceptor) state_->acceptor->close();
    return;
  }
  net::post(state_->ioc, [state = state_.get()] { state->acceptor->close(); });
  for (const auto& weak : connections) {
    if (auto connection = weak.lock()) connection->Abort();
  }
  // Every socket closes, so every pending operation completes and run() returns.
  state_->work.reset();
  for (auto& thread : state_->threads) thread.join();
}

}  // namespace embedding::server
