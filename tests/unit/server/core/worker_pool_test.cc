// The worker pool: RunAndWait runs its work on a pool thread (with one thread, always the same
// one, which the inference thread relies on) and returns only after the work has finished.
#include "server/core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace embedding::server {
namespace {

TEST(WorkerPool, RunAndWaitRunsOnTheOneThreadAndReturnsAfterTheWork) {
  WorkerPool pool(1);
  std::set<std::thread::id> ran_on;
  for (int i = 0; i < 5; ++i) {
    bool finished = false;
    pool.RunAndWait([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ran_on.insert(std::this_thread::get_id());
      finished = true;
    });
    EXPECT_TRUE(finished);
  }
  ASSERT_EQ(ran_on.size(), 1u);
  EXPECT_NE(*ran_on.begin(), std::this_thread::get_id());
}

TEST(WorkerPool, RunAndWaitFromManyThreadsRunsEachWorkOnce) {
  WorkerPool pool(1);
  std::atomic<int> runs{0}, concurrent{0}, most{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        pool.RunAndWait([&] {
          most = std::max(most.load(), ++concurrent);
          ++runs;
          --concurrent;
        });
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(runs, 40);
  EXPECT_EQ(most, 1);  // one thread: the work never overlaps
}

}  // namespace
}  // namespace embedding::server
