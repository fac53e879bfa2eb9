// A fixed set of threads running queued closures: where requests are tokenised and planned,
// so gRPC handler threads only validate, admit and enqueue.
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

  // Thread-safe. The queue is bounded by admission (one closure per admitted request).
  void Schedule(std::function<void()> work);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace embedding::server
