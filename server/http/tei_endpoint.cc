#include "server/http/tei_endpoint.h"

#include <utility>

#include "server/http/api_call.h"
#include "server/http/tei_api.h"

namespace embedding::server {
namespace {

constexpr char kJson[] = "application/json";

HttpResponse TeiError(const absl::Status& status, bool body_error) {
  HttpResponse response{TeiHttpStatus(status, body_error), kJson, TeiErrorBody(status), {}};
  if (response.status == 429) response.headers.emplace_back("Retry-After", "1");
  return response;
}

const char* MethodName(TeiRoute route) {
  switch (route) {
    case TeiRoute::kEmbed:
      return "TEI/Embed";
    case TeiRoute::kEmbedSparse:
      return "TEI/EmbedSparse";
    case TeiRoute::kEmbedAll:
      return "TEI/EmbedAll";
  }
  return "TEI";
}

absl::Status Authorize(const OpenAiEndpointOptions& options, const HttpExchange& ex) {
  if (options.auth == nullptr) return absl::OkStatus();
  return options.auth->Check(ex.Header("Authorization"));
}

void Embed(const OpenAiEndpointOptions& options, TeiRoute route,
           std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<ApiCall>(options.embedder, std::move(exchange), MethodName(route));
  auto fail = [&call](const absl::Status& status, bool body_error = false) {
    call->Finish(TeiError(status, body_error), status);
  };
  HttpExchange& ex = call->exchange();
  if (absl::Status allowed = Authorize(options, ex); !allowed.ok()) return fail(allowed);
  auto parsed = ParseTeiEmbedRequest(ex.body(), route, options.embedder->limits());
  if (!parsed.ok()) return fail(parsed.status(), /*body_error=*/true);
  auto deadline = RequestDeadline(ex, options.default_timeout);
  if (!deadline.ok()) return fail(deadline.status());
  parsed->deadline = *deadline;
  auto job = options.embedder->StartEmbed(
      *std::move(parsed), [call, route](absl::StatusOr<EmbedAnswer> answer) {
        call->Finish(answer.ok() ? EmbedAnswerResponse(*answer, TeiEmbedBody(*answer, route))
                                 : TeiError(answer.status(), false),
                     answer.status());
      });
  if (!job.ok()) return fail(job.status());
  ex.OnDisconnect([job = *std::move(job)] { job->Cancel(); });
}

void Tokenize(const OpenAiEndpointOptions& options, std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<ApiCall>(options.embedder, std::move(exchange), "TEI/Tokenize");
  auto fail = [&call](const absl::Status& status, bool body_error = false) {
    call->Finish(TeiError(status, body_error), status);
  };
  HttpExchange& ex = call->exchange();
  if (absl::Status allowed = Authorize(options, ex); !allowed.ok()) return fail(allowed);
  auto parsed = ParseTeiTokenizeRequest(ex.body(), options.embedder->limits());
  if (!parsed.ok()) return fail(parsed.status(), /*body_error=*/true);
  absl::Status started = options.embedder->StartTokenize(
      *std::move(parsed), [call](absl::StatusOr<TokenizeAnswer> answer) {
        call->Finish(answer.ok() ? HttpResponse{200, kJson, TeiTokenizeBody(*answer), {}}
                                 : TeiError(answer.status(), false),
                     answer.status());
      });
  if (!started.ok()) return fail(started);
}

void Info(const OpenAiEndpointOptions& options, HttpExchange& ex) {
  if (absl::Status allowed = Authorize(options, ex); !allowed.ok())
    return ex.Respond(TeiError(allowed, false));
  auto model = options.embedder->FindModel("");
  if (!model.ok()) return ex.Respond(TeiError(model.status(), false));
  ex.Respond({200, kJson, TeiInfoBody(**model, options.embedder->limits(), options.tei_info), {}});
}

}  // namespace

void AddTeiRoutes(HttpListener* listener, std::shared_ptr<const OpenAiEndpointOptions> options) {
  for (const auto& [path, route] :
       {std::pair{"/embed", TeiRoute::kEmbed}, std::pair{"/", TeiRoute::kEmbed},
        std::pair{"/embed_sparse", TeiRoute::kEmbedSparse},
        std::pair{"/embed_all", TeiRoute::kEmbedAll}}) {
    listener->Route("POST", path, [options, route = route](std::shared_ptr<HttpExchange> ex) {
      Embed(*options, route, std::move(ex));
    });
  }
  listener->Route("POST", "/tokenize", [options](std::shared_ptr<HttpExchange> ex) {
    Tokenize(*options, std::move(ex));
  });
  listener->Route("GET", "/info",
                  [options](std::shared_ptr<HttpExchange> ex) { Info(*options, *ex); });
}

}  // namespace embedding::server
