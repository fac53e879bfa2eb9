// One call on the API listener (--openai-listen), whichever route family it came by (OpenAI or
// TEI), and what every HTTP route shares. The handlers every route uses:
//   ServeEmbed: ApiCall::Begin (count, bearer check) → the route's parse → deadline →
//     Embedder::StartEmbed … the job's completion, on a core worker → the route's answer
//     body → Finish (the listener writes it).
//   ServeTokenize: the same with Embedder::StartTokenize;  ServeRead: GET routes.
// A call is counted by the Embedder while it runs, answered once, then reported (metrics,
// request log) once. Also the one bearer check and the one status-to-HTTP rule of the HTTP
// doors (the ops endpoint's included).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/embedder.h"
#include "server/http/http_exchange.h"
#include "server/security/bearer_auth.h"

namespace embedding::server {

// What every API route uses; must outlive the listener.
struct ApiContext {
  Embedder* embedder = nullptr;
  const BearerAuth* auth = nullptr;  // set: every route needs a bearer token
  // A request's deadline when it sends no X-Request-Timeout header.
  absl::Duration default_timeout = absl::Minutes(5);
};

// How a route family writes an error: its HTTP status (`body_error`: the body itself was
// refused, which TEI answers apart) and its JSON body.
struct ApiErrors {
  int (*http_status)(const absl::Status& status, bool body_error);
  std::string (*body)(const absl::Status& status);
};

// A parsed embed request: the core's call, and how the route writes its answer's body.
struct ParsedEmbed {
  EmbedCall call;
  std::function<std::string(const EmbedAnswer&)> answer_body;
  // Body fields the route ignored, as TEI ignores fields it does not know: counted in
  // embedding_http_ignored_fields_total and logged once per name, so a client that thinks it
  // set one can find out.
  std::vector<std::string> ignored_fields;
};
using EmbedParser =
    std::function<absl::StatusOr<ParsedEmbed>(std::string_view body, const RequestLimits&)>;
// A parsed Rerank or Classify request and how the route writes its answer.
struct ParsedScore {
  std::variant<RerankCall, ClassifyCall> call;
  std::function<std::string(const ScoreAnswer&)> answer_body;
  std::vector<std::string> ignored_fields;  // as ParsedEmbed's
};
using ScoreParser =
    std::function<absl::StatusOr<ParsedScore>(std::string_view body, const RequestLimits&)>;
using TokenizeParser = absl::StatusOr<TokenizeCall> (*)(std::string_view body,
                                                        const RequestLimits& limits);
using TokenizeBody = std::string (*)(const TokenizeAnswer& answer);

class ApiCall {
 public:
  // Counts the call and checks its bearer token; when the check fails, answers 401 in the
  // family's shape, reports the call, and returns null. `method` (a string literal) names the
  // call in metrics and logs ("OpenAI/Embeddings").
  static std::shared_ptr<ApiCall> Begin(const ApiContext& context, const ApiErrors& errors,
                                        const char* method, std::shared_ptr<HttpExchange> exchange);
  ApiCall(Embedder* embedder, const ApiErrors& errors, std::shared_ptr<HttpExchange> exchange,
          const char* method);

  // Sends `response` (with X-Request-Id) and reports the call with `status`. Once.
  void Finish(HttpResponse response, const absl::Status& status);
  // Finish with the family's error answer for `status`.
  void Fail(const absl::Status& status, bool body_error = false);

  HttpExchange& exchange() { return *exchange_; }
  // Reported with the call (metrics, log): the body fields its route ignored.
  void SetIgnoredFields(std::vector<std::string> fields) {
    record_.ignored_fields = std::move(fields);
  }

 private:
  Embedder* const embedder_;
  const ApiErrors errors_;
  const std::shared_ptr<HttpExchange> exchange_;
  CallRecord record_;
  const absl::Time started_;
};

// The embed handler of every API route: Begin, parse the body (a refusal is a body error),
// the deadline, StartEmbed; the answer is sent from the job's completion, with
// EmbedAnswerResponse's headers. A client that goes away cancels the job, which frees its slot
// and tokens at once.
void ServeEmbed(const ApiContext& context, const ApiErrors& errors, const char* method,
                const EmbedParser& parse, std::shared_ptr<HttpExchange> exchange);

// The rerank and classify handler: as ServeEmbed, with StartRerank or StartClassify.
void ServeScore(const ApiContext& context, const ApiErrors& errors, const char* method,
                const ScoreParser& parse, std::shared_ptr<HttpExchange> exchange);

// The tokenize handler: Begin, parse, StartTokenize (which holds a request slot while it
// works), and `body` of the answer.
void ServeTokenize(const ApiContext& context, const ApiErrors& errors, const char* method,
                   TokenizeParser parse, TokenizeBody body, std::shared_ptr<HttpExchange> exchange);

// A GET route that reads what is served: the bearer check, then 200 with `body`'s JSON or the
// family's error. Not counted as a call (it starts no work).
void ServeRead(const ApiContext& context, const ApiErrors& errors,
               const std::function<absl::StatusOr<std::string>()>& body, HttpExchange& exchange);

// A successful embedding answer: 200, JSON `body`, and the headers that say what produced it,
// X-Model-Version and X-Embedding-Dtype (fp32, bf16 or int8): vectors of one model version and
// dtype are comparable bit for bit, across dtypes only within the accuracy guard.
HttpResponse EmbedAnswerResponse(const EmbedAnswer& answer, std::string body);
// The same headers for any answer `model` produced (Rerank's, Classify's).
HttpResponse ModelAnswerResponse(const ServedModel& model, std::string body);

// The request's deadline: X-Request-Timeout (seconds, in (0, 86400]) or now + `fallback`.
// INVALID_ARGUMENT naming X-Request-Timeout.
absl::StatusOr<absl::Time> RequestDeadline(const HttpExchange& exchange, absl::Duration fallback);

// OK when `auth` is null or accepts the request's "Authorization: Bearer" token; its
// UNAUTHENTICATED otherwise. The HTTP doors' one bearer check.
absl::Status Authorize(const BearerAuth* auth, const HttpExchange& exchange);

// The one status-to-HTTP rule: 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 404 NOT_FOUND,
// 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED, and 500 for the rest
// (ReportedCode's INTERNAL). TEI's routes start from it and rename a few.
int HttpStatusOf(const absl::Status& status);

// An error answer with the headers its status calls for: Retry-After on 429 (admission frees
// within about a second), WWW-Authenticate on 401 (RFC 6750).
HttpResponse ErrorAnswer(int http_status, std::string content_type, std::string body);

}  // namespace embedding::server
