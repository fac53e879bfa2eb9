#include "tests/testing/metrics_scrape.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>

#include "absl/time/clock.h"

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

void ExpectAccountingReturnsToZero(const std::string& http_address) {
  double tokens = -1, requests = -1;
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  do {
    absl::SleepFor(absl::Milliseconds(100));
    tokens = ScrapeMetric(http_address, "embedding_queued_tokens");
    requests = ScrapeMetric(http_address, "embedding_in_flight_requests");
  } while ((tokens != 0 || requests != 0) && absl::Now() < give_up);
  EXPECT_EQ(tokens, 0) << "queued tokens leaked";
  EXPECT_EQ(requests, 0) << "request slots leaked";
}

}  // namespace embedding::testing
