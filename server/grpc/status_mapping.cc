#include "server/grpc/status_mapping.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/core/chunk_planner.h"
#include "server/core/reported_code.h"

namespace embedding::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(ReportedCode(status));
  std::string message(status.message());
  if (status.GetPayload(kPastWindowPayload).has_value()) {
    absl::StrAppend(&message,
                    " (strategy LONG_TEXT_STRATEGY_REJECT; set strategy to "
                    "LONG_TEXT_STRATEGY_TRUNCATE or a LONG_TEXT_STRATEGY_CHUNK_* value for "
                    "long text)");
  }
  return grpc::Status(code, message);
}

}  // namespace embedding::server
