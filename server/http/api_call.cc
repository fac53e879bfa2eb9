#include "server/http/api_call.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"

namespace embedding::server {

ApiCall::ApiCall(Embedder* embedder, std::shared_ptr<HttpExchange> exchange, const char* method)
    : embedder_(embedder),
      exchange_(std::move(exchange)),
      record_{method, AcceptRequestId(exchange_->Header("X-Request-Id"))},
      started_(absl::Now()) {
  embedder_->CallStarted();
}

void ApiCall::Finish(HttpResponse response, const absl::Status& status) {
  response.headers.emplace_back("X-Request-Id", record_.request_id);
  exchange_->Respond(std::move(response));
  record_.code = status.code();
  record_.message = std::string(status.message());
  record_.seconds = absl::ToDoubleSeconds(absl::Now() - started_);
  embedder_->CallDone(record_);  // after Respond: a drained server has posted every answer
}

HttpResponse EmbedAnswerResponse(const EmbedAnswer& answer, std::string body) {
  return HttpResponse{200,
                      "application/json",
                      std::move(body),
                      {{"X-Model-Version", answer.model->version},
                       {"X-Embedding-Dtype",
                        model_store::ComputeDTypeName(answer.model->model->encoder().dtype())}}};
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

}  // namespace embedding::server
