// A unary reactor that counts itself as an active call of the Embedder, carries the call's
// request id, times itself, reports the code the client saw, and forwards client cancellation
// to a hook. Owns itself: deleted in OnDone.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "server/core/embedder.h"

namespace embedding::server {

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // `embedder` must outlive the call.
  UnaryCall(Embedder* embedder, const char* method, grpc::CallbackServerContext* context);

  // Finishes with `status`; later calls are ignored (each RPC finishes once).
  void FinishOnce(const grpc::Status& status);
  // The absl status as its gRPC twin (status_mapping.h).
  void FinishOnce(const absl::Status& status);

  // Runs `hook` on client cancellation, or at once if the call is already cancelled.
  void SetOnCancel(std::function<void()> hook);

  void OnCancel() override;
  void OnDone() override;

 private:
  Embedder* const embedder_;
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
