// The last W unit vectors of one (model, length bucket, tempscale) series, with their sum
// kept incrementally so each update costs O(d): the mean pairwise cosine of n unit vectors is
// (||sum||^2 - n) / (n (n - 1)).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace embedding::server {

class CollapseWindow {
 public:
  explicit CollapseWindow(size_t capacity) : capacity_(capacity) {}

  // Adds unit vector `v` (evicting the oldest when full). Returns its cosine to the centroid
  // of the window before it was added, if the window was not empty. A vector of another
  // dimension than the window's (a reloaded model) starts the window afresh. Not thread-safe.
  std::optional<double> Add(const std::vector<float>& v);
  // Forgets every vector.
  void Clear();

  size_t size() const { return count_; }
  // Mean pairwise cosine; unset below two vectors.
  std::optional<double> MeanCosine() const;

 private:
  void Recompute();

  const size_t capacity_;
  std::vector<std::vector<float>> ring_;
  size_t next_ = 0;
  size_t count_ = 0;
  std::vector<double> sum_;
  // Incremental sums drift; rebuild from the ring every `capacity_` updates.
  size_t updates_since_rebuild_ = 0;
};

}  // namespace embedding::server
