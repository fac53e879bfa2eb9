// The incremental collapse window against a brute-force pairwise mean over the same window.
#include "server/observability/collapse_window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>

namespace embedding::server {
namespace {

std::vector<float> RandomUnit(std::mt19937* rng, size_t dim, float bias) {
  std::normal_distribution<float> normal;
  std::vector<float> v(dim);
  double norm = 0;
  for (size_t d = 0; d < dim; ++d) {
    v[d] = normal(*rng) + (d == 0 ? bias : 0.0f);
    norm += double(v[d]) * v[d];
  }
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

TEST(CollapseWindow, MatchesBruteForceThroughEvictions) {
  std::mt19937 rng(3);
  CollapseWindow window(16);
  std::deque<std::vector<float>> recent;
  EXPECT_FALSE(window.MeanCosine().has_value());
  for (int step = 0; step < 200; ++step) {
    const auto v = RandomUnit(&rng, 24, 1.5f);
    // Centroid cosine before adding, by brute force.
    std::vector<float> centroid(24, 0.0f);
    for (const auto& r : recent)
      for (size_t d = 0; d < 24; ++d) centroid[d] += r[d];
    const auto got_centroid = window.Add(v);
    if (recent.empty()) {
      EXPECT_FALSE(got_centroid.has_value());
    } else {
      ASSERT_TRUE(got_centroid.has_value());
      EXPECT_NEAR(*got_centroid, Dot(v, centroid) / std::sqrt(Dot(centroid, centroid)), 1e-6);
    }
    recent.push_back(v);
    if (recent.size() > 16) recent.pop_front();
    ASSERT_EQ(window.size(), recent.size());
    if (recent.size() < 2) continue;
    double pairs = 0;
    int count = 0;
    for (size_t i = 0; i < recent.size(); ++i)
      for (size_t j = i + 1; j < recent.size(); ++j, ++count) pairs += Dot(recent[i], recent[j]);
    EXPECT_NEAR(*window.MeanCosine(), pairs / count, 1e-6) << "step " << step;
  }
}

// A reloaded model may change the dimension: its first vector starts the window afresh
// (it once read past the old, shorter sum: the reload test under ASan found it).
TEST(CollapseWindow, AVectorOfAnotherDimensionStartsAfresh) {
  std::mt19937 rng(7);
  CollapseWindow window(8);
  for (int i = 0; i < 5; ++i) window.Add(RandomUnit(&rng, 96, 1.0f));
  const auto wide = RandomUnit(&rng, 256, 1.0f);
  EXPECT_FALSE(window.Add(wide).has_value());
  EXPECT_EQ(window.size(), 1u);
  const auto next = RandomUnit(&rng, 256, 1.0f);
  ASSERT_TRUE(window.Add(next).has_value());
  EXPECT_NEAR(*window.MeanCosine(), Dot(wide, next), 1e-6);
  window.Clear();
  EXPECT_EQ(window.size(), 0u);
  EXPECT_FALSE(window.MeanCosine().has_value());
}

}  // namespace
}  // namespace embedding::server
