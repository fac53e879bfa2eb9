#include "server/core/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace embedding::server {

TokenReservation& TokenReservation::operator=(TokenReservation&& other) noexcept {
  if (this != &other) {
    Return(tokens_);
    admission_ = other.admission_;
    tokens_ = other.tokens_;
    other.admission_ = nullptr;
    other.tokens_ = 0;
  }
  return *this;
}

void TokenReservation::Return(int64_t tokens) {
  tokens = std::min(tokens, tokens_);
  if (admission_ == nullptr || tokens <= 0) return;
  tokens_ -= tokens;
  admission_->ReleaseTokens(tokens);
}

AdmissionPermit& AdmissionPermit::operator=(AdmissionPermit&& other) noexcept {
  if (this != &other) {
    Reset();
    admission_ = other.admission_;
    other.admission_ = nullptr;
  }
  return *this;
}

void AdmissionPermit::Reset() {
  if (admission_ == nullptr) return;
  admission_->ReleaseSlot();
  admission_ = nullptr;
}

absl::StatusOr<TokenReservation> AdmissionPermit::ReserveTokens(int64_t tokens) {
  if (admission_ == nullptr) return absl::FailedPreconditionError("request slot already returned");
  if (absl::Status reserved = admission_->Reserve(tokens); !reserved.ok()) return reserved;
  return TokenReservation(admission_, tokens);
}

Admission::Admission(int64_t max_concurrent_requests, int64_t max_queued_tokens,
                     absl::Duration leak_grace)
    : max_requests_(max_concurrent_requests),
      max_tokens_(max_queued_tokens),
      leak_grace_(leak_grace) {}

absl::StatusOr<AdmissionPermit> Admission::Admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (requests_ >= max_requests_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: ", max_requests_,
                     " requests in flight (--max-concurrent-requests); retry with backoff"));
  }
  ++requests_;
  NoteStateLocked();
  return AdmissionPermit(this);
}

void Admission::ReleaseSlot() {
  std::lock_guard<std::mutex> lock(mu_);
  --requests_;
  NoteStateLocked();
}

absl::Status Admission::Reserve(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tokens_ > 0 && tokens_ + tokens > max_tokens_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "server busy: ", tokens_, " tokens queued, this request needs ", tokens,
        " more, above the bound of ", max_tokens_, " (--max-queued-tokens); retry with backoff"));
  }
  tokens_ += tokens;
  NoteStateLocked();
  return absl::OkStatus();
}

void Admission::ReleaseTokens(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ -= tokens;
  NoteStateLocked();
}

void Admission::NoteStateLocked() {
  if (requests_ == 0 && tokens_ > 0) {
    if (idle_with_tokens_since_ == absl::InfiniteFuture()) idle_with_tokens_since_ = absl::Now();
  } else {
    idle_with_tokens_since_ = absl::InfiniteFuture();
  }
}

int64_t Admission::in_flight_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int64_t Admission::queued_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_;
}

absl::Status Admission::Consistency(absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_with_tokens_since_ == absl::InfiniteFuture() ||
      now - idle_with_tokens_since_ < leak_grace_) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      tokens_, " tokens have stayed queued with no request in flight for ",
      absl::FormatDuration(now - idle_with_tokens_since_),
      ": queue accounting leaked, so requests above the remaining --max-queued-tokens would be "
      "refused forever; replace this instance"));
}

}  // namespace embedding::server
