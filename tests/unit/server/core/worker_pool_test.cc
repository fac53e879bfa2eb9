// The worker pool: RunAndWait runs its work on a pool thread (with one thread, always the same
// one, which the inference thread relies on) and returns only after the work has finished;
// urgent work runs at a running closure's yield point.
#include "server/core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

// A long closure's yield point runs the urgent work queued meanwhile, on its own thread and
// before it goes on; other work waits its turn. RunAndWait from the pool's thread runs at once.
TEST(WorkerPool, RunUrgentRunsOnlyUrgentWorkInsideTheRunningClosure) {
  WorkerPool pool(1);
  std::mutex mu;
  std::vector<std::string> log;
  auto note = [&](const char* what) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(what);
  };
  std::atomic<bool> started{false}, urgent_ran{false};
  std::thread::id long_thread, urgent_thread;
  std::thread long_caller([&] {
    pool.RunAndWait([&] {
      long_thread = std::this_thread::get_id();
      note("long starts");
      started = true;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!urgent_ran && std::chrono::steady_clock::now() < give_up) {
        pool.RunUrgent();  // a yield point, reached again and again
        std::this_thread::yield();
      }
      pool.RunAndWait([&] { note("nested"); });  // from the pool's thread: at once
      note("long ends");
    });
  });
  while (!started) std::this_thread::yield();
  std::thread plain_caller([&] { pool.RunAndWait([&] { note("plain"); }); });
  std::thread urgent_caller([&] {
    pool.RunAndWait(
        [&] {
          urgent_thread = std::this_thread::get_id();
          note("urgent");
          urgent_ran = true;
        },
        /*urgent=*/true);
  });
  long_caller.join();
  plain_caller.join();
  urgent_caller.join();
  EXPECT_EQ(log, (std::vector<std::string>{"long starts", "urgent", "nested", "long ends",
                                           "plain"}));
  EXPECT_EQ(urgent_thread, long_thread);
}

}  // namespace
}  // namespace embedding::server
