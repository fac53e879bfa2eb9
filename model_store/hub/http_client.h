// A small blocking HTTP(S) client over libcurl, for the Hub downloader. Redirects are not
// followed here: the caller decides, per hop, whether the Authorization header may go along.
// TLS peers are always verified.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace embedding::model_store {

struct HttpClientOptions {
  std::string ca_bundle;  // PEM file of extra trust roots (corporate proxies); empty: system's
  std::string user_agent = "embedding-server";
  absl::Duration connect_timeout = absl::Seconds(10);
  // A transfer that moves no byte for this long is abandoned (a hung peer, not a slow one).
  absl::Duration stall_timeout = absl::Seconds(30);
};

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  int64_t range_start = -1;          // >= 0 sends "Range: bytes=N-"
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;          // the body when no sink took it (bounded by max_body)
  std::string redirect_url;  // a 3xx's Location, made absolute
};

// Receives a 200/206 body as it arrives, with the response's status and headers; a non-OK
// status aborts the transfer with it.
using BodySink =
    std::function<absl::Status(const HttpResponse& head, const char* data, size_t size)>;

// UNAVAILABLE for a transport failure (resolve, connect, TLS, reset, stall), naming the URL
// without its query; the sink's own error when it stops the transfer; RESOURCE_EXHAUSTED when a
// body without a sink exceeds `max_body`. Thread-compatible: one transfer at a time per object.
// Send is virtual so that tests can put a scripted Hub in libcurl's place.
class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  virtual ~HttpClient() = default;
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request,
                                            const BodySink* sink = nullptr,
                                            size_t max_body = 16 << 20);
  const HttpClientOptions& options() const { return options_; }

 private:
  HttpClientOptions options_;
};

// Percent-encodes one URL path segment or query value.
std::string UrlEscape(const std::string& text);

// "https://host:port" of an absolute URL (default ports made explicit), for same-host checks.
std::string UrlOrigin(const std::string& url);

}  // namespace embedding::model_store
