// TEI's routes on the API listener, beside the OpenAI ones:
//   POST /embed, POST / (as TEI answers it), /embed_sparse, /embed_all
//     → ParseTeiEmbedRequest → Embedder::StartEmbed … → TeiEmbedBody
//   POST /tokenize → Embedder::StartTokenize … → TeiTokenizeBody;  GET /info.
// The same bearer token, deadline header and cancellation as /v1/embeddings.
#pragma once

#include <memory>

#include "server/http/http_listener.h"
#include "server/http/openai_endpoint.h"

namespace embedding::server {

// `options` (and what it points to) must outlive the listener.
void AddTeiRoutes(HttpListener* listener, std::shared_ptr<const OpenAiEndpointOptions> options);

}  // namespace embedding::server
