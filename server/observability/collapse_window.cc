#include "server/observability/collapse_window.h"

#include <cmath>

namespace embedding::server {

void CollapseWindow::Clear() {
  ring_.clear();
  next_ = count_ = updates_since_rebuild_ = 0;
  sum_.clear();
}

std::optional<double> CollapseWindow::Add(const std::vector<float>& v) {
  if (sum_.size() != v.size()) {
    Clear();
    sum_.assign(v.size(), 0.0);
  }
  std::optional<double> centroid_cosine;
  if (count_ > 0) {
    double dot = 0, norm = 0;
    for (size_t d = 0; d < v.size(); ++d) {
      dot += sum_[d] * v[d];
      norm += sum_[d] * sum_[d];
    }
    if (norm > 0) centroid_cosine = dot / std::sqrt(norm);
  }
  if (ring_.size() < capacity_) {
    ring_.push_back(v);
    ++count_;
  } else {
    for (size_t d = 0; d < v.size(); ++d) sum_[d] -= ring_[next_][d];
    ring_[next_] = v;
  }
  next_ = (next_ + 1) % capacity_;
  for (size_t d = 0; d < v.size(); ++d) sum_[d] += v[d];
  if (++updates_since_rebuild_ >= capacity_) Recompute();
  return centroid_cosine;
}

void CollapseWindow::Recompute() {
  sum_.assign(sum_.size(), 0.0);
  for (const auto& v : ring_)
    for (size_t d = 0; d < v.size(); ++d) sum_[d] += v[d];
  updates_since_rebuild_ = 0;
}

std::optional<double> CollapseWindow::MeanCosine() const {
  if (count_ < 2) return std::nullopt;
  double norm2 = 0;
  for (double s : sum_) norm2 += s * s;
  const double n = static_cast<double>(count_);
  return (norm2 - n) / (n * (n - 1));
}

}  // namespace embedding::server
