// LogThrottle: a burst per period, then silence counted and reported with the next line.
#include "server/observability/log_throttle.h"

#include <gtest/gtest.h>

namespace embedding::server {
namespace {

TEST(LogThrottle, AllowsABurstPerPeriodAndReportsWhatItDropped) {
  LogThrottle throttle(3, absl::Seconds(1));
  const absl::Time start = absl::FromUnixSeconds(1000);
  int64_t suppressed = -1;
  int allowed = 0;
  for (int i = 0; i < 10; ++i)
    allowed += throttle.Allow(start + absl::Milliseconds(i), &suppressed);
  EXPECT_EQ(allowed, 3);
  EXPECT_FALSE(throttle.Allow(start + absl::Milliseconds(999), &suppressed));
  ASSERT_TRUE(throttle.Allow(start + absl::Seconds(1), &suppressed));
  EXPECT_EQ(suppressed, 8);
  ASSERT_TRUE(throttle.Allow(start + absl::Seconds(1), &suppressed));
  EXPECT_EQ(suppressed, 0);
}

}  // namespace
}  // namespace embedding::server
