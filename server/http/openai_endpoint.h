// The OpenAI-compatible door, on a listener of its own (--openai-listen):
//   POST /v1/embeddings → ParseOpenAiEmbeddingsRequest → Embedder::StartEmbed
//   … done(EmbedAnswer) → OpenAiEmbeddingsBody,
//   and GET /v1/models. Errors are OpenAI error objects with HTTP statuses. TEI's routes
//   share the listener (tei_endpoint.h).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/embedder.h"
#include "server/http/http_listener.h"
#include "server/http/tei_api.h"
#include "server/security/bearer_auth.h"

namespace embedding::server {

struct OpenAiEndpointOptions {
  std::string address;  // --openai-listen
  Embedder* embedder = nullptr;
  const BearerAuth* auth = nullptr;   // set: every route needs a bearer token
  HttpTlsCertificate* tls = nullptr;  // set (--http-tls): HTTPS
  // A request's deadline when it sends no X-Request-Timeout header (seconds).
  absl::Duration default_timeout = absl::Minutes(5);
  TeiServerInfo tei_info;  // what TEI's GET /info reports of the server
};

class OpenAiEndpoint {
 public:
  // Listens and serves; the embedder (and what it uses) must outlive the endpoint.
  // INVALID_ARGUMENT or UNAVAILABLE naming --openai-listen.
  static absl::StatusOr<std::unique_ptr<OpenAiEndpoint>> Start(OpenAiEndpointOptions options);
  int port() const { return listener_->port(); }

 private:
  OpenAiEndpoint() = default;
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace embedding::server
