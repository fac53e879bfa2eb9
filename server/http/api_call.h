// One call on the API listener (--openai-listen: the OpenAI and TEI routes): counted by the
// Embedder while it runs, answered once, then reported (metrics, request log) once.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/embedder.h"
#include "server/http/http_exchange.h"
#include "server/observability/request_log.h"

namespace embedding::server {

class ApiCall {
 public:
  // `method` (a string literal) names the call in metrics and logs ("OpenAI/Embeddings").
  ApiCall(Embedder* embedder, std::shared_ptr<HttpExchange> exchange, const char* method);

  // Sends `response` (with X-Request-Id) and reports the call with `status`.
  void Finish(HttpResponse response, const absl::Status& status);

  HttpExchange& exchange() { return *exchange_; }

 private:
  Embedder* const embedder_;
  const std::shared_ptr<HttpExchange> exchange_;
  CallRecord record_;
  const absl::Time started_;
};

// A successful embedding answer: 200, JSON `body`, and the headers that say what produced it,
// X-Model-Version and X-Embedding-Dtype (fp32, bf16 or int8): vectors of one model version and
// dtype are comparable bit for bit, across dtypes only within the accuracy guard.
HttpResponse EmbedAnswerResponse(const EmbedAnswer& answer, std::string body);

// The request's deadline: X-Request-Timeout (seconds, in (0, 86400]) or now + `fallback`.
// INVALID_ARGUMENT naming X-Request-Timeout.
absl::StatusOr<absl::Time> RequestDeadline(const HttpExchange& exchange, absl::Duration fallback);

}  // namespace embedding::server
