#include "server/http/api_endpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/http/cohere_embed_api.h"
#include "server/http/openai_api.h"
#include "server/http/rerank_api.h"
#include "server/http/tei_scoring_api.h"

namespace embedding::server {
namespace {

// Event-loop threads: they parse bodies and start jobs; answers are built on the core's
// workers, and a waiting request holds no thread.
constexpr int kListenerThreads = 2;

const ApiErrors kOpenAiErrors{
    [](const absl::Status& status, bool /*body_error*/) { return HttpStatusOf(status); },
    OpenAiErrorBody};
const ApiErrors kTeiErrors{TeiHttpStatus, TeiErrorBody};
const ApiErrors kCohereErrors{
    [](const absl::Status& status, bool /*body_error*/) { return HttpStatusOf(status); },
    CohereErrorBody};

// The body allows --max-request-bytes of text, JSON escaping (a "\u00e9" is 6 bytes for 2),
// and the request's other fields.
size_t MaxBodyBytes(const RequestLimits& limits) {
  return static_cast<size_t>(limits.max_request_bytes) * 3 + (64 << 10);
}

// The listener's own refusals (413 for a body past the limit, 404 for other paths, 400 for a
// malformed request) in the OpenAI error shape.
HttpResponse Refusal(size_t max_body, int status, const HttpExchange& request) {
  absl::Status error = absl::InvalidArgumentError("body: not a well-formed HTTP request");
  if (status == 413 && request.path() == "/v1/files") {
    error = absl::InvalidArgumentError("file: larger than --batch-max-file-bytes");
  } else if (status == 413) {
    error = absl::InvalidArgumentError(
        absl::StrCat("body: larger than ", max_body, " bytes (3 x --max-request-bytes + 64 KiB)"));
  } else if (status == 404) {
    error = absl::NotFoundError(
        absl::StrCat("no route ", request.method(), " ", request.path().substr(0, 128),
                     "; this listener serves POST /v1/embeddings and "
                     "GET /v1/models, TEI's POST /embed, /, "
                     "/embed_sparse, /embed_all, /tokenize, /rerank, /predict, /similarity "
                     "and GET /info, POST /v1/rerank, /v2/rerank and /v2/embed, "
                     "GET /openapi.json (and /docs with --api-docs-dir), and with "
                     "--batch-dir /v1/files and /v1/batches"));
  }
  return ErrorAnswer(status, "application/json", OpenAiErrorBody(error));
}

void AddRoutes(HttpListener& listener, std::shared_ptr<const ApiContext> context,
               const TeiServerInfo& tei_info) {
  auto embed = [context](const ApiErrors& errors, const char* method, EmbedParser parse) {
    return [context, &errors, method, parse = std::move(parse)](std::shared_ptr<HttpExchange> ex) {
      ServeEmbed(*context, errors, method, parse, std::move(ex));
    };
  };
  listener.Route("POST", "/v1/embeddings",
                 embed(kOpenAiErrors, "OpenAI/Embeddings", ParseOpenAiEmbed));
  listener.Route("POST", "/v2/embed", embed(kCohereErrors, "Cohere/Embed", ParseCohereEmbed));
  listener.Route("POST", "/embed",
                 embed(kTeiErrors, "TEI/Embed", TeiEmbedParser(TeiRoute::kEmbed)));
  listener.Route("POST", "/", embed(kTeiErrors, "TEI/Embed", TeiEmbedParser(TeiRoute::kEmbed)));
  listener.Route("POST", "/embed_sparse",
                 embed(kTeiErrors, "TEI/EmbedSparse", TeiEmbedParser(TeiRoute::kEmbedSparse)));
  listener.Route("POST", "/embed_all",
                 embed(kTeiErrors, "TEI/EmbedAll", TeiEmbedParser(TeiRoute::kEmbedAll)));
  listener.Route("POST", "/similarity", embed(kTeiErrors, "TEI/Similarity", ParseTeiSimilarity));
  auto score = [context](const ApiErrors& errors, const char* method, ScoreParser parse) {
    return [context, &errors, method, parse = std::move(parse)](std::shared_ptr<HttpExchange> ex) {
      ServeScore(*context, errors, method, parse, std::move(ex));
    };
  };
  listener.Route("POST", "/rerank", score(kTeiErrors, "TEI/Rerank", ParseTeiRerank));
  listener.Route("POST", "/predict", score(kTeiErrors, "TEI/Predict", ParseTeiPredict));
  listener.Route("POST", "/v1/rerank", score(kOpenAiErrors, "Rerank/v1", ParseRerankRequest));
  listener.Route("POST", "/v2/rerank", score(kOpenAiErrors, "Rerank/v2", ParseRerankRequest));
  listener.Route("POST", "/tokenize", [context](std::shared_ptr<HttpExchange> ex) {
    ServeTokenize(*context, kTeiErrors, "TEI/Tokenize", ParseTeiTokenizeRequest, TeiTokenizeBody,
                  std::move(ex));
  });
  const Embedder* embedder = context->embedder;
  listener.Route("GET", "/v1/models", [context, embedder](std::shared_ptr<HttpExchange> ex) {
    ServeRead(
        *context, kOpenAiErrors,
        [embedder]() -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(auto models, embedder->CurrentModels());
          return OpenAiModelsBody(models);
        },
        *ex);
  });
  listener.Route("GET", "/info", [context, embedder, tei_info](std::shared_ptr<HttpExchange> ex) {
    ServeRead(
        *context, kTeiErrors,
        [embedder, &tei_info]() -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(auto model, embedder->FindModel(""));  // TEI serves one model
          return TeiInfoBody(*model, embedder->limits(), tei_info);
        },
        *ex);
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<ApiEndpoint>> ApiEndpoint::Start(ApiEndpointOptions options) {
  const HttpListenerOptions listen{options.address, "--openai-listen", kListenerThreads,
                                   MaxBodyBytes(options.context.embedder->limits()), options.tls};
  ASSIGN_OR_RETURN(std::unique_ptr<HttpListener> listener, HttpListener::Create(listen));
  AddRoutes(*listener, std::make_shared<const ApiContext>(options.context), options.tei_info);
  options.docs.AddRoutes(*listener);
  if (options.more_routes) options.more_routes(*listener);
  listener->SetErrorResponder(
      [max_body = listen.max_body_bytes](int status, const HttpExchange& r) {
        return Refusal(max_body, status, r);
      });
  RETURN_IF_ERROR(listener->Start());
  std::unique_ptr<ApiEndpoint> endpoint(new ApiEndpoint());
  endpoint->listener_ = std::move(listener);
  return endpoint;
}

}  // namespace embedding::server
