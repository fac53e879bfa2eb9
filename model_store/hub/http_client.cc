#include "model_store/hub/http_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace embedding::model_store {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  CURL* curl = nullptr;
  const BodySink* sink = nullptr;
  size_t max_body = 0;
  HttpResponse response;
  absl::Status sink_status;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) {
    transfer->response.headers.clear();  // an interim response (100 Continue) came first
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    transfer->response.headers[name] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return line.size();
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  transfer->response.status = status;
  if (transfer->sink != nullptr && (status == 200 || status == 206)) {
    transfer->sink_status = (*transfer->sink)(transfer->response, data, bytes);
    return transfer->sink_status.ok() ? bytes : 0;
  }
  if (transfer->response.body.size() + bytes > transfer->max_body) {
    transfer->sink_status = absl::ResourceExhaustedError(
        absl::StrCat("response body over ", transfer->max_body, " bytes"));
    return 0;
  }
  transfer->response.body.append(data, bytes);
  return bytes;
}

std::string WithoutQuery(const std::string& url) { return url.substr(0, url.find('?')); }

}  // namespace

HttpClient::HttpClient(HttpClientOptions options) : options_(std::move(options)) { GlobalInit(); }

absl::StatusOr<HttpResponse> HttpClient::Send(const HttpRequest& request, const BodySink* sink,
                                              size_t max_body) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  Transfer transfer{curl.get(), sink, max_body, {}, absl::OkStatus()};
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers)
    headers = curl_slist_append(headers, header.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_bundle.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(
      c, CURLOPT_LOW_SPEED_TIME,
      static_cast<long>(std::max<int64_t>(1, absl::ToInt64Seconds(options_.stall_timeout))));
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  const std::string range = absl::StrCat(request.range_start, "-");
  if (request.range_start >= 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);

  const CURLcode code = curl_easy_perform(c);
  if (!transfer.sink_status.ok()) return transfer.sink_status;
  if (code != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(request.method, " ", WithoutQuery(request.url), ": ",
                                               curl_easy_strerror(code)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &transfer.response.status);
  char* redirect = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect != nullptr)
    transfer.response.redirect_url = redirect;
  return std::move(transfer.response);
}

std::string UrlEscape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = escaped == nullptr ? "" : escaped;
  curl_free(escaped);
  return out;
}

std::string UrlOrigin(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> handle(curl_url(), curl_url_cleanup);
  if (curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  std::string out;
  for (auto [part, flags, sep] :
       {std::tuple{CURLUPART_SCHEME, 0u, "://"}, std::tuple{CURLUPART_HOST, 0u, ":"},
        std::tuple{CURLUPART_PORT, unsigned{CURLU_DEFAULT_PORT}, ""}}) {
    char* value = nullptr;
    if (curl_url_get(handle.get(), part, &value, flags) != CURLUE_OK) return "";
    absl::StrAppend(&out, absl::AsciiStrToLower(value), sep);
    curl_free(value);
  }
  return out;
}

}  // namespace embedding::model_store
