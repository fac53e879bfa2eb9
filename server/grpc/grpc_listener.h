// The gRPC listener: one grpc::Server carrying the EmbeddingService, the standard health
// service (NOT_SERVING until SetServing(true)) and, if asked, reflection.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace embedding::server {

struct GrpcListenerOptions {
  std::string address;            // --listen, "host:port"; port 0 picks a free one
  int64_t max_request_bytes = 0;  // --max-request-bytes; messages may carry 4 MiB more
  bool reflection = true;
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

class GrpcListener {
 public:
  // Binds and serves `service`, which must outlive the listener. UNAVAILABLE naming --listen
  // when the address cannot be bound (a port in use is a start-up error).
  static absl::StatusOr<std::unique_ptr<GrpcListener>> Start(const GrpcListenerOptions& options,
                                                             grpc::Service* service);
  // Finishes open calls (cancelling those still running after `grace`) and stops.
  ~GrpcListener();

  int port() const { return port_; }
  // The health service's answer, for the whole server and for the EmbeddingService.
  void SetServing(bool serving);
  // Stops accepting calls; calls still open after `grace` are cancelled.
  void Shutdown(absl::Duration grace);

 private:
  GrpcListener() = default;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace embedding::server
