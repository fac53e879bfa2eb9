// Reads sums of Prometheus samples from a server's /metrics, so `embedctl bench` can report
// what the server saw during a run (batch fill) next to what the client measured.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace embedding::client {

// Sum over label sets of each sample name in `names`, from http://ADDRESS/metrics.
// UNAVAILABLE when the endpoint cannot be read.
absl::StatusOr<std::map<std::string, double>> ScrapeSums(const std::string& address,
                                                         const std::vector<std::string>& names);

}  // namespace embedding::client
