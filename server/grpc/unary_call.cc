#include "server/grpc/unary_call.h"

#include "server/grpc/call_context.h"
#include "server/grpc/status_mapping.h"

namespace embedding::server {

UnaryCall::UnaryCall(Embedder* embedder, const char* method, grpc::CallbackServerContext* context)
    : embedder_(embedder),
      method_(method),
      request_id_(AcceptRequestId(context)),
      deadline_(CallDeadline(context)),
      started_(absl::Now()) {
  embedder_->CallStarted();
}

void UnaryCall::FinishOnce(const grpc::Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    code_ = status.error_code();
    message_ = status.error_message();
  }
  Finish(status);
}

void UnaryCall::FinishOnce(const absl::Status& status) { FinishOnce(ToGrpcStatus(status)); }

void UnaryCall::SetOnCancel(std::function<void()> hook) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_) {
      on_cancel_ = std::move(hook);
      return;
    }
  }
  hook();
}

void UnaryCall::OnCancel() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    hook = std::move(on_cancel_);
  }
  if (hook) hook();
}

void UnaryCall::OnDone() {
  CallRecord record{method_, request_id_, absl::StatusCode::kOk, "",
                    absl::ToDoubleSeconds(absl::Now() - started_)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    record.code = static_cast<absl::StatusCode>(code_);
    record.message = message_;
    // A cancelled call ends with what the client saw, whatever the server answered late.
    if (cancelled_) {
      record.code = absl::Now() >= deadline_ ? absl::StatusCode::kDeadlineExceeded
                                             : absl::StatusCode::kCancelled;
      record.message.clear();
    }
  }
  embedder_->CallDone(record);
  delete this;
}

}  // namespace embedding::server
