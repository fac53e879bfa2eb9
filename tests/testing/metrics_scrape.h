// Reads one sample from a server's /metrics, for tests that check the server's own counters.
#pragma once

#include <string>

namespace embedding::testing {

// The value of the first sample of `/metrics` at `http_address` ("host:port") whose series
// (name and labels, as printed) matches the regular expression `series`; 0 when none does,
// -1 when /metrics cannot be read.
double ScrapeMetric(const std::string& http_address, const std::string& series);

// The status of GET `path` at `http_address`, or -1.
int HttpStatus(const std::string& http_address, const std::string& path);

// Polls the server at `http_address` until its queued tokens and in-flight requests are both
// 0, or 30 s pass, and expects both to have reached 0 (a gtest failure names the leak).
void ExpectAccountingReturnsToZero(const std::string& http_address);

}  // namespace embedding::testing
