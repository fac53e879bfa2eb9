#include "server/http/openai_endpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/http/api_call.h"
#include "server/http/openai_api.h"
#include "server/http/tei_endpoint.h"

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

// One POST /v1/embeddings: parse, start the job, and answer when it completes. A client that
// goes away cancels the job, which frees its slot and tokens at once.
void Embeddings(const OpenAiEndpointOptions& options, std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<ApiCall>(options.embedder, std::move(exchange), "OpenAI/Embeddings");
  auto fail = [&call](const absl::Status& status) { call->Finish(ErrorResponse(status), status); };
  HttpExchange& ex = call->exchange();
  if (options.auth != nullptr) {
    if (absl::Status allowed = options.auth->Check(ex.Header("Authorization")); !allowed.ok())
      return fail(allowed);
  }
  auto parsed = ParseOpenAiEmbeddingsRequest(ex.body(), options.embedder->limits());
  if (!parsed.ok()) return fail(parsed.status());
  auto deadline = RequestDeadline(ex, options.default_timeout);
  if (!deadline.ok()) return fail(deadline.status());
  parsed->call.deadline = *deadline;
  const bool base64 = parsed->base64;
  auto job = options.embedder->StartEmbed(
      std::move(parsed->call), [call, base64](absl::StatusOr<EmbedAnswer> answer) {
        call->Finish(answer.ok()
                         ? EmbedAnswerResponse(*answer, OpenAiEmbeddingsBody(*answer, base64))
                         : ErrorResponse(answer.status()),
                     answer.status());
      });
  if (!job.ok()) return fail(job.status());
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
                                             "GET /v1/models, and TEI's POST /embed, /, "
                                             "/embed_sparse, /embed_all, /tokenize and GET /info"));
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
  AddTeiRoutes(&server, shared);
  server.SetErrorResponder([max_body = listen.max_body_bytes](int status, const HttpExchange& r) {
    return Refusal(max_body, status, r);
  });
  RETURN_IF_ERROR(endpoint->listener_->Start());
  return endpoint;
}

}  // namespace embedding::server
