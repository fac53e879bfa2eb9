// Served vectors against vectors the test computes from the model core's hidden states.
#pragma once

#include <google/protobuf/repeated_field.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace embedding::testing {

inline void Normalize(std::vector<double>* v) {
  double n = 0;
  for (double x : *v) n += x * x;
  for (double& x : *v) x /= std::sqrt(n);
}

// Normalised mean of rows [first, last) of `states` ([rows x dim], row-major).
inline std::vector<double> MeanRows(const std::vector<float>& states, int64_t dim, size_t first,
                                    size_t last) {
  std::vector<double> mean(dim, 0.0);
  for (size_t row = first; row < last; ++row)
    for (int64_t d = 0; d < dim; ++d) mean[d] += states[row * dim + d];
  Normalize(&mean);
  return mean;
}

// Same length, every element within `tolerance`.
inline void ExpectClose(const google::protobuf::RepeatedField<float>& got,
                        const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(static_cast<size_t>(got.size()), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << i;
}

}  // namespace embedding::testing
