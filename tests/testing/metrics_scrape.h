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
// 0, or 30 s pass; leaves the last values read in `tokens` and `requests`.
void WaitForAccountingToReturnToZero(const std::string& http_address, double* tokens,
                                     double* requests);

}  // namespace embedding::testing
