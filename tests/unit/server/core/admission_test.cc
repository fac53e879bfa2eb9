// Admission: permits and reservations give back exactly what they hold, on every path.
#include "server/core/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

TEST(Admission, PermitReturnsItsSlotOnceWhenDestroyedMovedOrReset) {
  Admission admission(2, 100);
  {
    auto a = admission.Admit();
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(admission.in_flight_requests(), 1);
    AdmissionPermit moved = *std::move(a);  // the moved-from permit gives nothing back
    EXPECT_EQ(admission.in_flight_requests(), 1);
    moved.Reset();
    moved.Reset();
    EXPECT_EQ(admission.in_flight_requests(), 0);
    auto b = admission.Admit();
    AdmissionPermit assigned;
    assigned = *std::move(b);
    EXPECT_EQ(admission.in_flight_requests(), 1);
  }
  EXPECT_EQ(admission.in_flight_requests(), 0);
}

TEST(Admission, ConcurrencyBoundNamesItsFlag) {
  Admission admission(1, 100);
  auto first = admission.Admit();
  auto second = admission.Admit();
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("--max-concurrent-requests"));
  first->Reset();
  EXPECT_TRUE(admission.Admit().ok());
}

TEST(Admission, ReservationReturnsTokensPartlyAndTheRestOnDestruction) {
  Admission admission(4, 100);
  auto permit = admission.Admit();
  {
    auto tokens = permit->ReserveTokens(60);
    ASSERT_TRUE(tokens.ok());
    EXPECT_EQ(admission.queued_tokens(), 60);
    tokens->Return(25);
    EXPECT_EQ(admission.queued_tokens(), 35);
    tokens->Return(1000);  // clamped: never more than it holds
    EXPECT_EQ(admission.queued_tokens(), 0);
    tokens->Return(5);
    EXPECT_EQ(admission.queued_tokens(), 0);
    auto more = permit->ReserveTokens(30);
    EXPECT_EQ(admission.queued_tokens(), 30);
  }
  EXPECT_EQ(admission.queued_tokens(), 0);
}

TEST(Admission, TokenBoundNamesItsFlagButAdmitsAnOversizedRequestIntoAnEmptyQueue) {
  Admission admission(4, 100);
  auto a = admission.Admit(), b = admission.Admit();
  auto huge = a->ReserveTokens(500);  // alone: admitted
  ASSERT_TRUE(huge.ok());
  auto refused = b->ReserveTokens(1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-queued-tokens"));
  huge = TokenReservation();  // move-assigning releases the old reservation
  EXPECT_EQ(admission.queued_tokens(), 0);
  EXPECT_TRUE(b->ReserveTokens(100).ok());
}

TEST(Admission, ReservingAfterTheSlotWasReturnedIsRefused) {
  Admission admission(1, 100);
  auto permit = admission.Admit();
  permit->Reset();
  EXPECT_EQ(permit->ReserveTokens(1).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(admission.queued_tokens(), 0);
}

// The readiness signal: tokens queued with no request in flight for longer than the grace
// period mean the books leaked (this is the state the old leak left servers in).
TEST(Admission, ConsistencyFailsWhenTokensOutliveEveryRequest) {
  Admission admission(4, 100, absl::Seconds(5));
  std::optional<TokenReservation> leaked;
  {
    auto permit = admission.Admit();
    leaked = *permit->ReserveTokens(40);
  }                                           // the slot is back; the tokens are not
  EXPECT_TRUE(admission.Consistency().ok());  // within the grace period: dropped work leaving
  const absl::Status late = admission.Consistency(absl::Now() + absl::Seconds(6));
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.message(), HasSubstr("40 tokens"));
  leaked.reset();
  EXPECT_TRUE(admission.Consistency(absl::Now() + absl::Seconds(60)).ok());
  // Busy (a request in flight) is never inconsistent.
  auto busy = admission.Admit();
  auto tokens = busy->ReserveTokens(10);
  EXPECT_TRUE(admission.Consistency(absl::Now() + absl::Hours(1)).ok());
}

}  // namespace
}  // namespace embedding::server
