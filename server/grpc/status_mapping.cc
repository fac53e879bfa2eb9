#include "server/grpc/status_mapping.h"

#include <string>

namespace embedding::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  auto code = static_cast<grpc::StatusCode>(status.code());
  if (status.code() == absl::StatusCode::kDataLoss || status.code() == absl::StatusCode::kUnknown)
    code = grpc::StatusCode::INTERNAL;
  return grpc::Status(code, std::string(status.message()));
}

}  // namespace embedding::server
