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

void WorkerPool::Schedule(std::function<void()> work) { Enqueue({std::move(work), false}); }

void WorkerPool::Enqueue(Work work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

bool WorkerPool::OnPoolThread() const {
  const std::thread::id self = std::this_thread::get_id();
  for (const std::thread& t : threads_) {
    if (t.get_id() == self) return true;
  }
  return false;
}

void WorkerPool::Loop() {
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      work = std::move(queue_.front().run);
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

void WorkerPool::RunAndWait(const std::function<void()>& work, bool urgent) {
  if (OnPoolThread()) {  // queued, it would wait for the closure this thread is inside
    work();
    return;
  }
  std::promise<void> ran;
  Enqueue({[&] {
             work();
             ran.set_value();
           },
           urgent});
  ran.get_future().wait();
}

void WorkerPool::RunUrgent() {
  std::vector<std::function<void()>> urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->urgent) {
        urgent.push_back(std::move(it->run));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& work : urgent) work();
}

void WorkerPool::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

}  // namespace embedding::server
