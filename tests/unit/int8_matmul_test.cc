// The int8 linear layer against the arithmetic it claims, computed here in double from the
// same quantisation rules, and against the fp32 layer it stands for.
#include "model_store/int8_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace embedding::model_store {
namespace {

// x W^T + b with W int8 per output row (symmetric, 127 levels) and x uint8 over the whole
// matrix (asymmetric, range widened to hold 0), integer products exact.
std::vector<double> QuantisedReference(const torch::Tensor& x, const torch::Tensor& w,
                                       const torch::Tensor& b) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  auto xa = x.accessor<float, 2>();
  auto wa = w.accessor<float, 2>();
  auto ba = b.accessor<float, 1>();
  double lo = 0, hi = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k)
      lo = std::min<double>(lo, xa[r][k]), hi = std::max<double>(hi, xa[r][k]);
  const double x_scale = (hi - lo) / 255.0;
  const int64_t zero = std::clamp<int64_t>(std::llround(-lo / x_scale), 0, 255);
  std::vector<int64_t> xq(rows * in);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k)
      xq[r * in + k] = std::clamp<int64_t>(std::llround(xa[r][k] / x_scale) + zero, 0, 255);
  std::vector<double> result(rows * out);
  for (int64_t n = 0; n < out; ++n) {
    double amax = 0;
    for (int64_t k = 0; k < in; ++k) amax = std::max<double>(amax, std::fabs(wa[n][k]));
    const double w_scale = amax / 127.0;
    std::vector<int64_t> wq(in);
    for (int64_t k = 0; k < in; ++k) wq[k] = std::llround(wa[n][k] / w_scale);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += (xq[r * in + k] - zero) * wq[k];
      result[r * out + n] = acc * x_scale * w_scale + ba[n];
    }
  }
  return result;
}

// Small layers and a BERT-wide one: at 768 inputs oneDNN packs the weights for its AMX or VNNI
// kernel where the CPU has one (80 inputs stay on the plain layout).
TEST(Int8Matmul, IsTheQuantisedArithmeticAndCloseToFp32) {
  torch::manual_seed(3);
  for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 80}, {256, 768}}) {
    const torch::Tensor w = torch::randn({out, in}) * torch::linspace(0.1, 3, out).unsqueeze(1);
    const torch::Tensor b = torch::randn({out}) * 5;  // large, so a scaled bias would show
    const Int8Matmul layer(w, b);
    for (int64_t rows : {1, 7, 64}) {
      SCOPED_TRACE(testing::Message() << rows << " x " << in << " x " << out);
      const torch::Tensor x = torch::randn({rows, in}) * 2 + 0.5;
      const torch::Tensor got = layer.Apply(x);
      ASSERT_EQ(got.sizes(), (std::vector<int64_t>{rows, out}));
      const std::vector<double> want = QuantisedReference(x, w, b);
      const torch::Tensor fp32 = torch::addmm(b, x, w.t());
      auto got_a = got.accessor<float, 2>();
      auto fp32_a = fp32.accessor<float, 2>();
      double quantisation_error = 0, fp32_norm = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t n = 0; n < out; ++n) {
          // The same integers: only float rounding of the scales differs.
          EXPECT_NEAR(got_a[r][n], want[r * out + n], 1e-3 * (1 + std::fabs(want[r * out + n])));
          const double d = got_a[r][n] - fp32_a[r][n];
          quantisation_error += d * d;
          fp32_norm += fp32_a[r][n] * fp32_a[r][n];
        }
      }
      EXPECT_LT(std::sqrt(quantisation_error / fp32_norm), 0.02);
    }
  }
}

TEST(Int8Matmul, OnePrimitivePerRowCountWhateverTheActivationScale) {
  torch::manual_seed(4);
  const Int8Matmul layer(torch::randn({32, 64}), torch::randn({32}));
  for (int call = 0; call < 20; ++call) (void)layer.Apply(torch::randn({16, 64}) * (1 + call));
  EXPECT_EQ(layer.primitives(), 1u);
  (void)layer.Apply(torch::randn({8, 64}));
  EXPECT_EQ(layer.primitives(), 2u);
}

TEST(Int8Matmul, ZeroInputGivesTheBias) {
  const torch::Tensor b = torch::arange(16, torch::kFloat32);
  const Int8Matmul layer(torch::randn({16, 24}), b);
  EXPECT_TRUE(torch::allclose(layer.Apply(torch::zeros({5, 24})), b.expand({5, 16})));
}

}  // namespace
}  // namespace embedding::model_store
