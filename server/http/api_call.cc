#include "server/http/api_call.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "server/core/reported_code.h"
#include "server/observability/request_log.h"

namespace embedding::server {
namespace {

constexpr char kJson[] = "application/json";

}  // namespace

ApiCall::ApiCall(Embedder* embedder, const ApiErrors& errors,
                 std::shared_ptr<HttpExchange> exchange, const char* method)
    : embedder_(embedder),
      errors_(errors),
      exchange_(std::move(exchange)),
      record_{method, AcceptRequestId(exchange_->Header("X-Request-Id"))},
      started_(absl::Now()) {
  embedder_->CallStarted();
}

std::shared_ptr<ApiCall> ApiCall::Begin(const ApiContext& context, const ApiErrors& errors,
                                        const char* method,
                                        std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<ApiCall>(context.embedder, errors, std::move(exchange), method);
  if (absl::Status allowed = Authorize(context.auth, call->exchange()); !allowed.ok()) {
    call->Fail(allowed);
    return nullptr;
  }
  return call;
}

void ApiCall::Finish(HttpResponse response, const absl::Status& status) {
  response.headers.emplace_back("X-Request-Id", record_.request_id);
  exchange_->Respond(std::move(response));
  record_.code = status.code();
  record_.message = std::string(status.message());
  record_.seconds = absl::ToDoubleSeconds(absl::Now() - started_);
  embedder_->CallDone(record_);  // after Respond: a drained server has posted every answer
}

void ApiCall::Fail(const absl::Status& status, bool body_error) {
  Finish(ErrorAnswer(errors_.http_status(status, body_error), kJson, errors_.body(status)), status);
}

void ServeEmbed(const ApiContext& context, const ApiErrors& errors, const char* method,
                const EmbedParser& parse, std::shared_ptr<HttpExchange> exchange) {
  std::shared_ptr<ApiCall> call = ApiCall::Begin(context, errors, method, std::move(exchange));
  if (call == nullptr) return;
  auto parsed = parse(call->exchange().body(), context.embedder->limits());
  if (!parsed.ok()) return call->Fail(parsed.status(), /*body_error=*/true);
  call->SetIgnoredFields(std::move(parsed->ignored_fields));
  auto deadline = RequestDeadline(call->exchange(), context.default_timeout);
  if (!deadline.ok()) return call->Fail(deadline.status());
  parsed->call.deadline = *deadline;
  auto job = context.embedder->StartEmbed(
      std::move(parsed->call),
      [call, body = std::move(parsed->answer_body)](absl::StatusOr<EmbedAnswer> answer) {
        if (!answer.ok()) return call->Fail(answer.status());
        call->Finish(EmbedAnswerResponse(*answer, body(*answer)), absl::OkStatus());
      });
  if (!job.ok()) return call->Fail(job.status());
  call->exchange().OnDisconnect([job = *std::move(job)] { job->Cancel(); });
}

void ServeScore(const ApiContext& context, const ApiErrors& errors, const char* method,
                const ScoreParser& parse, std::shared_ptr<HttpExchange> exchange) {
  std::shared_ptr<ApiCall> call = ApiCall::Begin(context, errors, method, std::move(exchange));
  if (call == nullptr) return;
  auto parsed = parse(call->exchange().body(), context.embedder->limits());
  if (!parsed.ok()) return call->Fail(parsed.status(), /*body_error=*/true);
  call->SetIgnoredFields(std::move(parsed->ignored_fields));
  auto deadline = RequestDeadline(call->exchange(), context.default_timeout);
  if (!deadline.ok()) return call->Fail(deadline.status());
  auto done = [call, body = std::move(parsed->answer_body)](absl::StatusOr<ScoreAnswer> answer) {
    if (!answer.ok()) return call->Fail(answer.status());
    call->Finish(ModelAnswerResponse(*answer->model, body(*answer)), absl::OkStatus());
  };
  absl::StatusOr<std::shared_ptr<EmbedJob>> job;
  if (auto* rerank = std::get_if<RerankCall>(&parsed->call)) {
    rerank->deadline = *deadline;
    job = context.embedder->StartRerank(std::move(*rerank), std::move(done));
  } else {
    auto& classify = std::get<ClassifyCall>(parsed->call);
    classify.deadline = *deadline;
    job = context.embedder->StartClassify(std::move(classify), std::move(done));
  }
  if (!job.ok()) return call->Fail(job.status());
  call->exchange().OnDisconnect([job = *std::move(job)] { job->Cancel(); });
}

void ServeTokenize(const ApiContext& context, const ApiErrors& errors, const char* method,
                   TokenizeParser parse, TokenizeBody body,
                   std::shared_ptr<HttpExchange> exchange) {
  std::shared_ptr<ApiCall> call = ApiCall::Begin(context, errors, method, std::move(exchange));
  if (call == nullptr) return;
  auto parsed = parse(call->exchange().body(), context.embedder->limits());
  if (!parsed.ok()) return call->Fail(parsed.status(), /*body_error=*/true);
  const absl::Status started = context.embedder->StartTokenize(
      *std::move(parsed), [call, body](absl::StatusOr<TokenizeAnswer> answer) {
        if (!answer.ok()) return call->Fail(answer.status());
        call->Finish({200, kJson, body(*answer), {}}, absl::OkStatus());
      });
  if (!started.ok()) call->Fail(started);
}

void ServeRead(const ApiContext& context, const ApiErrors& errors,
               const std::function<absl::StatusOr<std::string>()>& body, HttpExchange& exchange) {
  const absl::Status allowed = Authorize(context.auth, exchange);
  absl::StatusOr<std::string> answer = allowed.ok() ? body() : allowed;
  if (!answer.ok()) {
    const absl::Status& status = answer.status();
    return exchange.Respond(
        ErrorAnswer(errors.http_status(status, false), kJson, errors.body(status)));
  }
  exchange.Respond({200, kJson, *std::move(answer), {}});
}

HttpResponse EmbedAnswerResponse(const EmbedAnswer& answer, std::string body) {
  return ModelAnswerResponse(*answer.model, std::move(body));
}

HttpResponse ModelAnswerResponse(const ServedModel& model, std::string body) {
  return HttpResponse{200,
                      kJson,
                      std::move(body),
                      {{"X-Model-Version", model.version},
                       {"X-Embedding-Dtype",
                        model_store::ComputeDTypeName(model.model->encoder().dtype())}}};
}

absl::StatusOr<absl::Time> RequestDeadline(const HttpExchange& exchange, absl::Duration fallback) {
  const std::string header = exchange.Header("X-Request-Timeout");
  if (header.empty()) return absl::Now() + fallback;
  double seconds = 0;
  if (!absl::SimpleAtod(header, &seconds) || !(seconds > 0 && seconds <= 86400)) {
    return absl::InvalidArgumentError(
        "X-Request-Timeout: must be a number of seconds in (0, 86400]");
  }
  return absl::Now() + absl::Milliseconds(static_cast<int64_t>(seconds * 1000));
}

int HttpStatusOf(const absl::Status& status) {
  using absl::StatusCode;
  constexpr std::pair<StatusCode, int> kHttpStatuses[] = {
      {StatusCode::kInvalidArgument, 400}, {StatusCode::kUnauthenticated, 401},
      {StatusCode::kNotFound, 404},        {StatusCode::kResourceExhausted, 429},
      {StatusCode::kUnavailable, 503},     {StatusCode::kDeadlineExceeded, 504}};
  const StatusCode reported = ReportedCode(status);
  for (const auto& [code, http_status] : kHttpStatuses)
    if (code == reported) return http_status;
  return 500;  // INTERNAL, and every code without a row
}

HttpResponse ErrorAnswer(int http_status, std::string content_type, std::string body) {
  HttpResponse response{http_status, std::move(content_type), std::move(body), {}};
  if (http_status == 429) response.headers.emplace_back("Retry-After", "1");
  if (http_status == 401) response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

absl::Status Authorize(const BearerAuth* auth, const HttpExchange& exchange) {
  if (auth == nullptr) return absl::OkStatus();
  return auth->Check(exchange.Header("Authorization"));
}

}  // namespace embedding::server
