#include "client/embedctl/metrics_probe.h"

#include <httplib.h>

#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace embedding::client {

absl::StatusOr<std::map<std::string, double>> ScrapeSums(const std::string& address,
                                                         const std::vector<std::string>& names) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port))
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "': need HOST:PORT"));
  httplib::Client http(address.substr(0, colon), port);
  auto response = http.Get("/metrics");
  if (!response || response->status != 200)
    return absl::UnavailableError(absl::StrCat("cannot read http://", address, "/metrics"));
  std::map<std::string, double> sums;
  for (const auto& n : names) sums[n] = 0;
  std::istringstream lines(response->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    auto it = sums.find(line.substr(0, name_end));
    if (it == sums.end()) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) it->second += value;
  }
  return sums;
}

}  // namespace embedding::client
