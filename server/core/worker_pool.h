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

  // Runs `work` on a pool thread and blocks until it has returned. Thread-safe. Called from
  // one of this pool's threads, runs `work` there at once (a pass run from a yield point).
  // `urgent` work may also run inside RunUrgent, ahead of what is running.
  void RunAndWait(const std::function<void()>& work, bool urgent = false);

  // From inside a closure on one of this pool's threads (a yield point of a long one): runs
  // the urgent work queued now on this thread, then returns. On the inference thread, it
  // lets an interactive forward pass run between the layers of a Batch API job's pass.
  void RunUrgent();

  // Blocks until nothing is queued or running (closures scheduled later are not waited for).
  void WaitIdle();

 private:
  struct Work {
    std::function<void()> run;
    bool urgent = false;
  };
  void Enqueue(Work work);
  void Loop();
  bool OnPoolThread() const;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Work> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace embedding::server
