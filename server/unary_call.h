// A unary reactor that counts itself as an active call, times itself, reports its final
// code, and forwards client cancellation to a hook.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <mutex>

#include "absl/time/time.h"
#include "server/embedding_service.h"

namespace embedding::server {

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(EmbeddingService* service, const char* method)
      : service_(service), method_(method), started_(absl::Now()) {
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

  // Set before the work starts; runs on client cancellation.
  void set_on_cancel(std::function<void()> hook) { on_cancel_ = std::move(hook); }

  void OnCancel() override {
    if (on_cancel_) on_cancel_();
  }

  void OnDone() override {
    service_->CallDone(method_, code_, started_);
    delete this;
  }

 private:
  EmbeddingService* const service_;
  const char* const method_;
  const absl::Time started_;
  std::function<void()> on_cancel_;
  std::mutex mu_;
  bool finished_ = false;
  grpc::StatusCode code_ = grpc::StatusCode::CANCELLED;
};

}  // namespace embedding::server
