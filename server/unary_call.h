// A unary reactor that counts itself as an active call, times itself, reports the code the
// client saw, and forwards client cancellation to a hook.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <mutex>

#include "absl/time/time.h"
#include "server/embedding_service.h"

namespace embedding::server {

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(EmbeddingService* service, const char* method, absl::Time deadline)
      : service_(service), method_(method), deadline_(deadline), started_(absl::Now()) {
    service_->CallStarted();
  }

  // Finishes with `status`; later calls are ignored (each RPC finishes once).
  void FinishOnce(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      finished_ = true;
      code_ = status.error_code();
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
    grpc::StatusCode code;
    {
      std::lock_guard<std::mutex> lock(mu_);
      code = code_;
      // A cancelled call ends with what the client saw, whatever the server answered late.
      if (cancelled_) {
        code = absl::Now() >= deadline_ ? grpc::StatusCode::DEADLINE_EXCEEDED
                                        : grpc::StatusCode::CANCELLED;
      }
    }
    service_->CallDone(method_, code, started_);
    delete this;
  }

 private:
  EmbeddingService* const service_;
  const char* const method_;
  const absl::Time deadline_;
  const absl::Time started_;
  std::mutex mu_;
  std::function<void()> on_cancel_;
  bool cancelled_ = false;
  bool finished_ = false;
  grpc::StatusCode code_ = grpc::StatusCode::CANCELLED;
};

}  // namespace embedding::server
