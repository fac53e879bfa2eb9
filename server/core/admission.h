// Bounds on concurrent requests and on queued tokens, handed out as owned objects: a request
// slot is an AdmissionPermit, queue space a TokenReservation. Both are move-only and give
// back what they hold in their destructor, so no path (success, error, cancellation,
// deadline, shutdown) releases by hand. Refusals are immediate (RESOURCE_EXHAUSTED), never a
// wait behind a blocked thread.
#pragma once

#include <cstdint>
#include <mutex>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace embedding::server {

class Admission;

// Tokens of queue space. Returns what it still holds when destroyed.
class TokenReservation {
 public:
  TokenReservation() = default;
  TokenReservation(TokenReservation&& other) noexcept { *this = std::move(other); }
  TokenReservation& operator=(TokenReservation&& other) noexcept;
  ~TokenReservation() { Return(tokens_); }

  // Gives `tokens` back early (a sequence left the queue); clamped to what is held.
  void Return(int64_t tokens);

 private:
  friend class AdmissionPermit;
  TokenReservation(Admission* admission, int64_t tokens) : admission_(admission), tokens_(tokens) {}

  Admission* admission_ = nullptr;
  int64_t tokens_ = 0;
};

// One request slot. Returns it when destroyed or reset.
class AdmissionPermit {
 public:
  AdmissionPermit() = default;
  AdmissionPermit(AdmissionPermit&& other) noexcept { *this = std::move(other); }
  AdmissionPermit& operator=(AdmissionPermit&& other) noexcept;
  ~AdmissionPermit() { Reset(); }

  // Gives the slot back now.
  void Reset();

  // Reserves `tokens` of queue for this request, or RESOURCE_EXHAUSTED naming
  // --max-queued-tokens. A request larger than the whole bound is admitted only into an
  // empty queue, so any document within the per-document limit can run eventually.
  absl::StatusOr<TokenReservation> ReserveTokens(int64_t tokens);

 private:
  friend class Admission;
  explicit AdmissionPermit(Admission* admission) : admission_(admission) {}

  Admission* admission_ = nullptr;
};

class Admission {
 public:
  // `leak_grace`: how long queued tokens may outlive every request before Consistency()
  // reports the accounting broken. Dropped work leaves the queue at the batcher's next cut,
  // after at most one forward pass, so a healthy server never comes near it.
  Admission(int64_t max_concurrent_requests, int64_t max_queued_tokens,
            absl::Duration leak_grace = absl::Seconds(30));
  // Every permit and reservation must be gone by now.
  ~Admission() = default;

  // A request slot, or RESOURCE_EXHAUSTED naming --max-concurrent-requests. Thread-safe.
  absl::StatusOr<AdmissionPermit> Admit();

  int64_t in_flight_requests() const;
  int64_t queued_tokens() const;

  // OK unless tokens have stayed queued with no request in flight for longer than the grace
  // period: then the server would refuse work forever while idle, so readiness must fail.
  // FAILED_PRECONDITION saying so. `now` is injectable for tests.
  absl::Status Consistency(absl::Time now = absl::Now()) const;

 private:
  friend class AdmissionPermit;
  friend class TokenReservation;

  void ReleaseSlot();
  absl::Status Reserve(int64_t tokens);
  void ReleaseTokens(int64_t tokens);
  // Tracks when the "idle with tokens queued" state began. Requires mu_.
  void NoteStateLocked();

  const int64_t max_requests_;
  const int64_t max_tokens_;
  const absl::Duration leak_grace_;
  mutable std::mutex mu_;
  int64_t requests_ = 0;
  int64_t tokens_ = 0;
  absl::Time idle_with_tokens_since_ = absl::InfiniteFuture();
};

}  // namespace embedding::server
