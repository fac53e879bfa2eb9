#include "server/core/worker_pool.h"

#include <future>

namespace embedding::server {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Schedule(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void WorkerPool::Loop() {
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      work = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    work();
    work = nullptr;  // destroy what it captured before counting it done
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0 && queue_.empty()) idle_cv_.notify_all();
    }
  }
}

void WorkerPool::RunAndWait(const std::function<void()>& work) {
  std::promise<void> ran;
  Schedule([&] {
    work();
    ran.set_value();
  });
  ran.get_future().wait();
}

void WorkerPool::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

}  // namespace embedding::server
