#include "server/core/model_reloader.h"

#include <chrono>

namespace embedding::server {
namespace {

// Replaced versions are freed within this long of their last request finishing.
constexpr auto kReleaseTick = std::chrono::seconds(1);

}  // namespace

ModelReloader::ModelReloader(ModelRegistry* registry, absl::Duration interval, bool measure_dtype,
                             OutcomeObserver observer)
    : registry_(registry),
      interval_(interval),
      measure_dtype_(measure_dtype),
      observer_(std::move(observer)) {
  thread_ = std::thread([this] { Run(); });
}

ModelReloader::~ModelReloader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

absl::StatusOr<std::vector<ReloadOutcome>> ModelReloader::ReloadNow(
    const std::string& model, std::optional<bool> measure_dtype) {
  auto outcomes =
      registry_->Reload(model, /*settled=*/false, measure_dtype.value_or(measure_dtype_));
  if (outcomes.ok()) Report(*outcomes);
  return outcomes;
}

void ModelReloader::Run() {
  absl::Time next_check = absl::Now() + interval_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, kReleaseTick, [this] { return stopping_; })) {
    lock.unlock();
    registry_->ReleaseUnused();
    if (interval_ > absl::ZeroDuration() && absl::Now() >= next_check) {
      auto outcomes = registry_->Reload("", /*settled=*/true, measure_dtype_);
      if (outcomes.ok()) Report(*outcomes);
      next_check = absl::Now() + interval_;
    }
    lock.lock();
  }
}

void ModelReloader::Report(const std::vector<ReloadOutcome>& outcomes) const {
  if (!observer_) return;
  for (const ReloadOutcome& outcome : outcomes) observer_(outcome);
}

}  // namespace embedding::server
