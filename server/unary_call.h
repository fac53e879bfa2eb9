// A unary reactor that counts itself as an active call, carries the call's request id, times
// itself, reports the code the client saw, and forwards client cancellation to a hook.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <mutex>

#include "absl/time/time.h"
#include "server/embedding_service.h"
#include "server/request_log.h"

namespace embedding::server {

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(EmbeddingService* service, const char* method,
            grpc::CallbackServerContext* context)
      : service_(service),
        method_(method),
        request_id_(AcceptRequestId(context)),
        deadline_(CallDeadline(context)),
        started_(absl::Now()) {
    service_->CallStarted();
  }

  // Finishes with `status`; later calls are ignored (each RPC finishes once).
  void FinishOnce(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      finished_ = true;
      code_ = status.error_code();
      message_ = status.error_message();
    }
    Finish(status);
  }

  // Runs `hook` on client cancellation, or at once if the call is already cancelled.
  void SetOnCancel(std::function<void()> hook) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!cancelled_) {
        on_cancel_ = std::move(hook);
        return;
      }
    }
    hook();
  }

  void OnCancel() override {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      hook = std::move(on_cancel_);
    }
    if (hook) hook();
  }

  void OnDone() override {
    CallRecord record{method_, request_id_, grpc::StatusCode::OK, "",
                      absl::ToDoubleSeconds(absl::Now() - started_)};
    {
      std::lock_guard<std::mutex> lock(mu_);
      record.code = code_;
      record.message = message_;
      // A cancelled call ends with what the client saw, whatever the server answered late.
      if (cancelled_) {
        record.code = absl::Now() >= deadline_ ? grpc::StatusCode::DEADLINE_EXCEEDED
                                               : grpc::StatusCode::CANCELLED;
        record.message.clear();
      }
    }
    service_->CallDone(record);
    delete this;
  }

 private:
  EmbeddingService* const service_;
  const char* const method_;
  const std::string request_id_;
  const absl::Time deadline_;
  const absl::Time started_;
  std::mutex mu_;
  std::function<void()> on_cancel_;
  bool cancelled_ = false;
  bool finished_ = false;
  grpc::StatusCode code_ = grpc::StatusCode::CANCELLED;
  std::string message_;
};

}  // namespace embedding::server
