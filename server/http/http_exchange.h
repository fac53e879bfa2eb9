// One HTTP request and its answer, as a route handler sees them. The handler may answer at
// once or later from any thread (Respond); while it has not, the listener watches the
// connection and tells the handler if the client goes away (OnDisconnect), so a request that
// waits for a model holds no thread and no poll.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace embedding::server {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
};

class HttpExchange {
 public:
  // How the listener sends an answer (on the connection's own executor).
  using Sender = std::function<void(HttpResponse)>;
  // The request headers a route reads, as sent; the listener copies these and no others.
  static constexpr const char* kRouteHeaders[] = {"Authorization", "X-Request-Id",
                                                  "X-Request-Timeout", "Content-Type"};
  using Headers = std::vector<std::pair<std::string, std::string>>;

  // `target` is the request target: the path, then optionally '?' and the query.
  HttpExchange(std::string method, std::string target, std::string body, Headers headers,
               Sender send)
      : method_(std::move(method)),
        path_(target.substr(0, target.find('?'))),
        query_(target.size() > path_.size() ? target.substr(path_.size() + 1) : std::string()),
        body_(std::move(body)),
        headers_(std::move(headers)),
        send_(std::move(send)) {}

  const std::string& method() const { return method_; }
  const std::string& path() const { return path_; }  // without the query
  // The query parameter `name`, percent-decoded ("" when absent).
  std::string QueryParam(absl::string_view name) const;
  const std::string& body() const { return body_; }
  // The value of one of kRouteHeaders ("" when absent); names are case-insensitive.
  std::string Header(absl::string_view name) const {
    for (const auto& [key, value] : headers_) {
      if (absl::EqualsIgnoreCase(key, name)) return value;
    }
    return "";
  }

  // Sends `response`. The first call wins; later ones are ignored. Thread-safe.
  void Respond(HttpResponse response) {
    Sender send;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (responded_) return;
      responded_ = true;
      send = std::move(send_);
      on_disconnect_ = nullptr;
    }
    send(std::move(response));
  }

  // Runs `hook` once if the client closes its connection before Respond (at once if it already
  // has). Runs on the listener's thread: it must not block.
  void OnDisconnect(std::function<void()> hook) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (responded_) return;
      if (!disconnected_) {
        on_disconnect_ = std::move(hook);
        return;
      }
    }
    hook();
  }

  // The listener saw the client go away.
  void Disconnected() {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      disconnected_ = true;
      hook = std::move(on_disconnect_);
    }
    if (hook) hook();
  }

 private:
  const std::string method_;
  const std::string path_;
  const std::string query_;
  const std::string body_;
  const Headers headers_;
  std::mutex mu_;
  Sender send_;
  std::function<void()> on_disconnect_;
  bool responded_ = false;
  bool disconnected_ = false;
};

}  // namespace embedding::server
