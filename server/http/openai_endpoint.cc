#include "server/http/openai_endpoint.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/http/openai_api.h"
#include "server/observability/request_log.h"

namespace embedding::server {
namespace {

// Event-loop threads: they parse bodies and start jobs; answers are built on the core's
// workers, and a waiting request holds no thread.
constexpr int kListenerThreads = 2;
constexpr char kJson[] = "application/json";

// The body allows --max-request-bytes of text, JSON escaping (a "\u00e9" is 6 bytes for 2),
// and the request's other fields.
size_t MaxBodyBytes(const RequestLimits& limits) {
  return static_cast<size_t>(limits.max_request_bytes) * 3 + (64 << 10);
}

HttpResponse ErrorResponse(const absl::Status& status) {
  HttpResponse response{OpenAiHttpStatus(status), kJson, OpenAiErrorBody(status), {}};
  if (response.status == 429) response.headers.emplace_back("Retry-After", "1");
  return response;
}

// The request's deadline: X-Request-Timeout (seconds, > 0) or the server's default.
absl::StatusOr<absl::Time> Deadline(const HttpExchange& exchange, absl::Duration fallback) {
  const std::string header = exchange.Header("X-Request-Timeout");
  if (header.empty()) return absl::Now() + fallback;
  double seconds = 0;
  if (!absl::SimpleAtod(header, &seconds) || !(seconds > 0 && seconds <= 86400)) {
    return absl::InvalidArgumentError(
        "X-Request-Timeout: must be a number of seconds in (0, 86400]");
  }
  return absl::Now() + absl::Milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Answers the exchange and reports the finished call to the Embedder, once.
class EmbeddingsCall {
 public:
  EmbeddingsCall(Embedder* embedder, std::shared_ptr<HttpExchange> exchange)
      : embedder_(embedder),
        exchange_(std::move(exchange)),
        record_{"OpenAI/Embeddings", AcceptRequestId(exchange_->Header("X-Request-Id"))},
        started_(absl::Now()) {
    embedder_->CallStarted();
  }

  void Finish(const absl::StatusOr<EmbedAnswer>& answer, bool base64) {
    HttpResponse response =
        answer.ok() ? HttpResponse{200, kJson, OpenAiEmbeddingsBody(*answer, base64), {}}
                    : ErrorResponse(answer.status());
    response.headers.emplace_back("X-Request-Id", record_.request_id);
    exchange_->Respond(std::move(response));
    record_.code = answer.status().code();
    record_.message = std::string(answer.status().message());
    record_.seconds = absl::ToDoubleSeconds(absl::Now() - started_);
    embedder_->CallDone(record_);  // after Respond: a drained server has posted every answer
  }

  HttpExchange& exchange() { return *exchange_; }

 private:
  Embedder* const embedder_;
  const std::shared_ptr<HttpExchange> exchange_;
  CallRecord record_;
  const absl::Time started_;
};

// One POST /v1/embeddings: parse, start the job, and answer when it completes. A client that
// goes away cancels the job, which frees its slot and tokens at once.
void Embeddings(const OpenAiEndpointOptions& options, std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<EmbeddingsCall>(options.embedder, std::move(exchange));
  HttpExchange& ex = call->exchange();
  if (options.auth != nullptr) {
    if (absl::Status allowed = options.auth->Check(ex.Header("Authorization")); !allowed.ok())
      return call->Finish(allowed, false);
  }
  auto parsed = ParseOpenAiEmbeddingsRequest(ex.body(), options.embedder->limits());
  if (!parsed.ok()) return call->Finish(parsed.status(), false);
  auto deadline = Deadline(ex, options.default_timeout);
  if (!deadline.ok()) return call->Finish(deadline.status(), false);
  parsed->call.deadline = *deadline;
  const bool base64 = parsed->base64;
  auto job = options.embedder->StartEmbed(
      std::move(parsed->call),
      [call, base64](absl::StatusOr<EmbedAnswer> answer) { call->Finish(answer, base64); });
  if (!job.ok()) return call->Finish(job.status(), false);
  ex.OnDisconnect([job = *std::move(job)] { job->Cancel(); });
}

// The listener's own refusals (413 for a body past the limit, 404 for other paths, 400 for a
// malformed request) in the OpenAI error shape.
HttpResponse Refusal(size_t max_body, int status, const HttpExchange& request) {
  absl::Status error = absl::InvalidArgumentError("body: not a well-formed HTTP request");
  if (status == 413) {
    error = absl::InvalidArgumentError(
        absl::StrCat("body: larger than ", max_body, " bytes (3 x --max-request-bytes + 64 KiB)"));
  } else if (status == 404) {
    error = absl::NotFoundError(absl::StrCat("no route ", request.method(), " ",
                                             request.path().substr(0, 128),
                                             "; this listener serves POST /v1/embeddings and "
                                             "GET /v1/models"));
  }
  HttpResponse response = ErrorResponse(error);
  response.status = status;
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiEndpoint>> OpenAiEndpoint::Start(
    OpenAiEndpointOptions options) {
  HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--openai-listen";
  listen.threads = kListenerThreads;
  listen.max_body_bytes = MaxBodyBytes(options.embedder->limits());
  listen.tls = options.tls;
  auto listener = HttpListener::Create(listen);
  if (!listener.ok()) return listener.status();
  std::unique_ptr<OpenAiEndpoint> endpoint(new OpenAiEndpoint());
  endpoint->listener_ = *std::move(listener);
  HttpListener& server = *endpoint->listener_;
  auto shared = std::make_shared<const OpenAiEndpointOptions>(std::move(options));

  server.Route("POST", "/v1/embeddings",
               [shared](std::shared_ptr<HttpExchange> ex) { Embeddings(*shared, std::move(ex)); });
  server.Route("GET", "/v1/models", [shared](std::shared_ptr<HttpExchange> ex) {
    if (shared->auth != nullptr) {
      if (absl::Status allowed = shared->auth->Check(ex->Header("Authorization")); !allowed.ok())
        return ex->Respond(ErrorResponse(allowed));
    }
    auto models = shared->embedder->CurrentModels();
    if (!models.ok()) return ex->Respond(ErrorResponse(models.status()));
    ex->Respond({200, kJson, OpenAiModelsBody(*models), {}});
  });
  server.SetErrorResponder([max_body = listen.max_body_bytes](int status, const HttpExchange& r) {
    return Refusal(max_body, status, r);
  });
  RETURN_IF_ERROR(endpoint->listener_->Start());
  return endpoint;
}

}  // namespace embedding::server
