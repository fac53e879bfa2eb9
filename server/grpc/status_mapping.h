// The one place that turns an absl::Status into a gRPC status.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace embedding::server {

// Codes carry over one to one (both follow google.rpc.Code). DATA_LOSS and UNKNOWN, which
// only a corrupt model or a bug produce on the request path, become INTERNAL. A refusal of a
// text past the window says which strategies take long text, by their enum names.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace embedding::server
