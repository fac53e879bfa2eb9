#include "server/grpc/call_context.h"

#include "server/observability/request_log.h"

namespace embedding::server {
namespace {

absl::string_view Metadata(const grpc::CallbackServerContext* context, const char* key) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? absl::string_view()
                              : absl::string_view(it->second.data(), it->second.size());
}

}  // namespace

absl::Time CallDeadline(const grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

std::string AcceptRequestId(grpc::CallbackServerContext* context) {
  const std::string id = AcceptRequestId(Metadata(context, "x-request-id"));
  // Trailing, not initial, metadata: response headers commit a call, and a committed call is
  // never retried, so a draining replica's UNAVAILABLE would stop reaching the client's retry
  // policy (the failover tests caught it).
  context->AddTrailingMetadata("x-request-id", id);
  return id;
}

absl::string_view AuthorizationHeader(const grpc::CallbackServerContext* context) {
  return Metadata(context, "authorization");
}

}  // namespace embedding::server
