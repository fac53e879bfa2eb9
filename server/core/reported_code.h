// The code a client is told for a status, on every door. DATA_LOSS and UNKNOWN, which only a
// corrupt model or a bug produce, are reported as INTERNAL; every other code as it is.
#pragma once

#include "absl/status/status.h"

namespace embedding::server {

inline absl::StatusCode ReportedCode(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  return code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kUnknown
             ? absl::StatusCode::kInternal
             : code;
}

}  // namespace embedding::server
