// What the gRPC door reads off a call's context: its deadline, its request id (returned to the
// client in trailing metadata) and its bearer token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace embedding::server {

// The call's deadline as absl::Time (InfiniteFuture when none).
absl::Time CallDeadline(const grpc::CallbackServerContext* context);

// The id of the call: its `x-request-id` when usable (request_log.h), else a fresh one. Adds it
// to the response's trailing metadata.
std::string AcceptRequestId(grpc::CallbackServerContext* context);

// The call's `authorization` metadata ("" when absent).
absl::string_view AuthorizationHeader(const grpc::CallbackServerContext* context);

}  // namespace embedding::server
