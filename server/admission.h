// Bounds on concurrent requests and on queued tokens. Lock-free counters; a request past a
// bound is refused at once (RESOURCE_EXHAUSTED), never queued behind a blocked thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace embedding::server {

class Admission {
 public:
  Admission(int64_t max_concurrent_requests, int64_t max_queued_tokens)
      : max_requests_(max_concurrent_requests), max_tokens_(max_queued_tokens) {}

  // Takes a request slot, or RESOURCE_EXHAUSTED naming --max-concurrent-requests.
  absl::Status AdmitRequest();
  void ReleaseRequest() { requests_.fetch_sub(1); }

  // Reserves `tokens` of queue, or RESOURCE_EXHAUSTED naming --max-queued-tokens. A single
  // request larger than the whole bound is admitted only into an empty queue, so a document
  // within the per-document limit can always run eventually.
  absl::Status ReserveTokens(int64_t tokens);
  void ReleaseTokens(int64_t tokens) { tokens_.fetch_sub(tokens); }

  int64_t in_flight_requests() const { return requests_.load(); }
  int64_t queued_tokens() const { return tokens_.load(); }

 private:
  const int64_t max_requests_;
  const int64_t max_tokens_;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> tokens_{0};
};

}  // namespace embedding::server
