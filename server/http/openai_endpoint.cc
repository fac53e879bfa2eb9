#include "server/http/openai_endpoint.h"

#include <algorithm>
#include <future>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/http/openai_request.h"
#include "server/http/openai_response.h"
#include "server/http/peer_socket.h"
#include "server/observability/request_log.h"

namespace embedding::server {
namespace {

// Each handler waits on its worker for its job, so there is one worker per request admission
// can admit, plus a few for the requests it refuses (429) and for /v1/models: admission, not
// the HTTP queue, decides who waits. An idle worker costs a parked thread; past 1,024 the
// excess waits in the HTTP queue instead.
size_t Workers(const RequestLimits& limits) {
  return std::min<size_t>(static_cast<size_t>(limits.max_concurrent_requests) + 8, 1024);
}
// How often a waiting handler looks whether its client is still there.
constexpr absl::Duration kDisconnectPoll = absl::Milliseconds(50);
constexpr char kJson[] = "application/json";

// The body allows --max-request-bytes of text, JSON escaping (a "\u00e9" is 6 bytes for 2),
// and the request's other fields.
size_t MaxBodyBytes(const RequestLimits& limits) {
  return static_cast<size_t>(limits.max_request_bytes) * 3 + (64 << 10);
}

void SendError(const absl::Status& status, httplib::Response& res) {
  res.status = OpenAiHttpStatus(status);
  if (res.status == 429) res.set_header("Retry-After", "1");
  res.set_content(OpenAiErrorBody(status), kJson);
}

// The request's deadline: X-Request-Timeout (seconds, > 0) or the server's default.
absl::StatusOr<absl::Time> Deadline(const httplib::Request& req, absl::Duration fallback) {
  if (!req.has_header("X-Request-Timeout")) return absl::Now() + fallback;
  double seconds = 0;
  if (!absl::SimpleAtod(req.get_header_value("X-Request-Timeout"), &seconds) ||
      !(seconds > 0 && seconds <= 86400)) {
    return absl::InvalidArgumentError(
        "X-Request-Timeout: must be a number of seconds in (0, 86400]");
  }
  return absl::Now() + absl::Milliseconds(static_cast<int64_t>(seconds * 1000));
}

// One POST /v1/embeddings, from body to answer. Waits on this worker for the job, cancelling
// it if the client goes away.
absl::Status Embed(const OpenAiEndpointOptions& options, const httplib::Request& req,
                   httplib::Response& res) {
  if (options.auth != nullptr) {
    const absl::Status allowed = options.auth->Check(req.get_header_value("Authorization"));
    if (!allowed.ok()) return allowed;
  }
  auto parsed = ParseOpenAiEmbeddingsRequest(req.body, options.embedder->limits());
  if (!parsed.ok()) return parsed.status();
  auto deadline = Deadline(req, options.default_timeout);
  if (!deadline.ok()) return deadline.status();
  parsed->call.deadline = *deadline;
  using Answer = absl::StatusOr<EmbedAnswer>;
  auto answer = std::make_shared<std::promise<Answer>>();
  std::future<Answer> answered = answer->get_future();
  auto job = options.embedder->StartEmbed(
      std::move(parsed->call), [answer](Answer done) { answer->set_value(std::move(done)); });
  if (!job.ok()) return job.status();
  const int fd = ConnectionSocket(req);
  while (answered.wait_for(absl::ToChronoNanoseconds(kDisconnectPoll)) !=
         std::future_status::ready) {
    if (fd >= 0 && PeerClosed(fd)) (*job)->Cancel();  // frees its slot; the answer follows
  }
  Answer done = answered.get();
  if (!done.ok()) return done.status();
  res.status = 200;
  res.set_content(OpenAiEmbeddingsBody(*done, parsed->base64), kJson);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiEndpoint>> OpenAiEndpoint::Start(
    OpenAiEndpointOptions options) {
  HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--openai-listen";
  listen.workers = Workers(options.embedder->limits());
  listen.max_body_bytes = MaxBodyBytes(options.embedder->limits());
  listen.tls = options.tls;
  auto listener = HttpListener::Create(listen);
  if (!listener.ok()) return listener.status();
  std::unique_ptr<OpenAiEndpoint> endpoint(new OpenAiEndpoint());
  endpoint->listener_ = *std::move(listener);
  httplib::Server& server = endpoint->listener_->server();
  auto shared = std::make_shared<const OpenAiEndpointOptions>(std::move(options));

  server.Post("/v1/embeddings", [shared](const httplib::Request& req, httplib::Response& res) {
    Embedder& embedder = *shared->embedder;
    embedder.CallStarted();
    const absl::Time started = absl::Now();
    CallRecord record{"OpenAI/Embeddings", AcceptRequestId(req.get_header_value("X-Request-Id"))};
    res.set_header("X-Request-Id", record.request_id);
    const absl::Status status = Embed(*shared, req, res);
    if (!status.ok()) SendError(status, res);
    record.code = status.code();
    record.message = std::string(status.message());
    record.seconds = absl::ToDoubleSeconds(absl::Now() - started);
    embedder.CallDone(record);
  });
  server.Get("/v1/models", [shared](const httplib::Request& req, httplib::Response& res) {
    if (shared->auth != nullptr) {
      if (absl::Status allowed = shared->auth->Check(req.get_header_value("Authorization"));
          !allowed.ok()) {
        return SendError(allowed, res);
      }
    }
    auto models = shared->embedder->CurrentModels();
    if (!models.ok()) return SendError(models.status(), res);
    res.set_content(OpenAiModelsBody(*models), kJson);
  });
  // httplib's own refusals (413 for a body past the limit, 404 for other paths) in the same
  // error shape.
  const size_t max_body = listen.max_body_bytes;
  server.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    absl::Status status = absl::UnknownError("request failed");
    if (res.status == 413 &&
        req.get_header_value("Content-Type") == "application/x-www-form-urlencoded") {
      // httplib parses form bodies itself, up to 8 KiB, before any route sees them.
      status = absl::InvalidArgumentError(
          "body: sent as a form (Content-Type: application/x-www-form-urlencoded), which is "
          "limited to 8192 bytes; send Content-Type: application/json");
    } else if (res.status == 413) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "body: larger than ", max_body, " bytes (3 x --max-request-bytes + 64 KiB)"));
    } else if (res.status == 404) {
      status = absl::NotFoundError(absl::StrCat("no route ", req.method, " ", req.path.substr(0, 128),
                                                "; this listener serves POST /v1/embeddings and "
                                                "GET /v1/models"));
    }
    const int http_status = res.status;
    res.set_content(OpenAiErrorBody(status), kJson);
    res.status = http_status;
  });
  RETURN_IF_ERROR(endpoint->listener_->Start());
  return endpoint;
}

}  // namespace embedding::server
