#include "tests/testing/metrics_scrape.h"

#include <httplib.h>

#include <regex>

namespace embedding::testing {
namespace {

httplib::Client ClientFor(const std::string& address) {
  return httplib::Client(address.substr(0, address.rfind(':')),
                         std::stoi(address.substr(address.rfind(':') + 1)));
}

}  // namespace

double ScrapeMetric(const std::string& http_address, const std::string& series) {
  auto response = ClientFor(http_address).Get("/metrics");
  if (!response || response->status != 200) return -1;
  std::smatch match;
  const std::regex line("(^|\n)" + series + " ([-0-9.e+]+)");
  return std::regex_search(response->body, match, line) ? std::stod(match[2]) : 0;
}

int HttpStatus(const std::string& http_address, const std::string& path) {
  auto response = ClientFor(http_address).Get(path);
  return response ? response->status : -1;
}

}  // namespace embedding::testing
