#include "server/grpc/grpc_listener.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace embedding::server {
namespace {

constexpr char kServiceName[] = "embedding.v1.EmbeddingService";

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcListener>> GrpcListener::Start(
    const GrpcListenerOptions& options, grpc::Service* service) {
  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, so a second server on the same port started and took
  // half the calls with other models. A port in use is a start-up error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::unique_ptr<GrpcListener> listener(new GrpcListener());
  builder.AddListeningPort(options.address, options.credentials, &listener->port_);
  builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(options.max_request_bytes + (4 << 20), INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  listener->server_ = builder.BuildAndStart();
  if (!listener->server_ || listener->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen=", options.address, ": cannot bind"));
  }
  listener->SetServing(false);
  return listener;
}

GrpcListener::~GrpcListener() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

void GrpcListener::SetServing(bool serving) {
  auto* health = server_->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

void GrpcListener::Shutdown(absl::Duration grace) {
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
}

}  // namespace embedding::server
