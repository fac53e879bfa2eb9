// The API listener (--openai-listen) and its route table: the OpenAI-compatible routes
// (wire format in openai_api.h), Hugging Face TEI's (tei_api.h, tei_scoring_api.h), the
// Cohere/Jina rerank shape (rerank_api.h) and Cohere's embed (cohere_embed_api.h), all served by
// the shared handlers of api_call.h:
//   POST /v1/embeddings                       ServeEmbed, ParseOpenAiEmbed
//   POST /embed, /, /embed_sparse, /embed_all  ServeEmbed, TeiEmbedParser(route)
//   POST /similarity                          ServeEmbed, ParseTeiSimilarity
//   POST /rerank, /predict                    ServeScore, ParseTeiRerank, ParseTeiPredict
//   POST /v1/rerank, /v2/rerank               ServeScore, ParseRerankRequest
//   POST /v2/embed                            ServeEmbed, ParseCohereEmbed
//   POST /tokenize                            ServeTokenize, ParseTeiTokenizeRequest
//   GET  /v1/models, /info                    ServeRead
//   GET  /openapi.json, /docs                 this table as OpenAPI 3.1, and its page (api_docs.h)
//   /v1/files, /v1/batches                    with --batch-dir: more_routes (batch_api.h)
// Each family answers errors in its own shape (ApiErrors); the listener's own refusals (404,
// 413, 400) are OpenAI error objects.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/http/api_call.h"
#include "server/http/api_docs.h"
#include "server/http/http_listener.h"
#include "server/http/tei_api.h"

namespace embedding::server {

struct ApiEndpointOptions {
  std::string address;  // --openai-listen
  ApiContext context;
  HttpTlsCertificate* tls = nullptr;  // set (--http-tls): HTTPS
  TeiServerInfo tei_info;             // what TEI's GET /info reports of the server
  ApiDocs docs;                       // GET /openapi.json and /docs
  // Routes served beside these (the Batch API's, server/batch/batch_api.h), added before the
  // listener starts.
  std::function<void(HttpListener&)> more_routes;
};

class ApiEndpoint {
 public:
  // Listens and serves; the embedder (and what it uses) must outlive the endpoint.
  // INVALID_ARGUMENT or UNAVAILABLE naming --openai-listen.
  static absl::StatusOr<std::unique_ptr<ApiEndpoint>> Start(ApiEndpointOptions options);
  int port() const { return listener_->port(); }

 private:
  ApiEndpoint() = default;
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace embedding::server
