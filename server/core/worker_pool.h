// A fixed set of threads running queued closures: where requests are tokenised and planned
// and where batch results are merged, so the doors' handler threads only validate, admit and
// enqueue. A one-thread pool is also the inference thread every model call runs on.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace embedding::server {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  // Runs what is queued, then joins.
  ~WorkerPool();

  // Thread-safe. The queue is bounded by admission: one closure per admitted request, plus
  // one per forward pass and per batch of dropped work.
  void Schedule(std::function<void()> work);

  // Runs `work` on a pool thread and blocks until it has returned. Thread-safe; must not be
  // called from one of this pool's threads.
  void RunAndWait(const std::function<void()>& work);

  // Blocks until nothing is queued or running (closures scheduled later are not waited for).
  void WaitIdle();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace embedding::server
