// The int8 linear layer against the arithmetic it claims, computed here in double from the
// same quantisation rules, and against the fp32 layer it stands for.
#include "model_store/kernels/int8_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace embedding::model_store {
namespace {

// x W^T + b with W int8 per output row (symmetric, 127 levels) and each row of x int8 on its
// own (symmetric, 127 levels, its scale from its own largest magnitude), integer products
// exact.
std::vector<double> QuantisedReference(const torch::Tensor& x, const torch::Tensor& w,
                                       const torch::Tensor& b) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  auto xa = x.accessor<float, 2>();
  auto wa = w.accessor<float, 2>();
  auto ba = b.accessor<float, 1>();
  std::vector<int64_t> xq(rows * in);
  std::vector<double> x_scales(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double largest = 0;
    for (int64_t k = 0; k < in; ++k) largest = std::max<double>(largest, std::fabs(xa[r][k]));
    x_scales[r] = largest > 0 ? largest / 127.0 : 1.0;
    for (int64_t k = 0; k < in; ++k)
      xq[r * in + k] = std::clamp<int64_t>(std::llround(xa[r][k] / x_scales[r]), -127, 127);
  }
  std::vector<double> result(rows * out);
  for (int64_t n = 0; n < out; ++n) {
    double amax = 0;
    for (int64_t k = 0; k < in; ++k) amax = std::max<double>(amax, std::fabs(wa[n][k]));
    const double w_scale = amax / 127.0;
    std::vector<int64_t> wq(in);
    for (int64_t k = 0; k < in; ++k) wq[k] = std::llround(wa[n][k] / w_scale);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += xq[r * in + k] * wq[k];
      result[r * out + n] = acc * x_scales[r] * w_scale + ba[n];
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

// A row's result is its own: alone, among rows a thousand times larger or all zero, at any
// position and in any row count, bit for bit (the BERT-wide layer takes the packed kernel).
TEST(Int8Matmul, ARowsResultDoesNotDependOnTheOtherRows) {
  torch::manual_seed(5);
  for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 80}, {768, 768}}) {
    const Int8Matmul layer(torch::randn({out, in}), torch::randn({out}));
    const torch::Tensor row = torch::randn({1, in});
    const torch::Tensor alone = layer.Apply(row);
    for (int64_t rows : {2, 7, 64, 512}) {
      for (int64_t at : {int64_t{0}, rows / 2, rows - 1}) {
        torch::Tensor x = torch::randn({rows, in}) * (rows % 2 == 0 ? 1000.0 : 0.0);
        x.narrow(0, at, 1).copy_(row);
        const torch::Tensor batched = layer.Apply(x).narrow(0, at, 1);
        EXPECT_TRUE(torch::equal(alone, batched))
            << out << " x " << in << ", row " << at << " of " << rows << ": max difference "
            << (alone - batched).abs().max().item<float>();
      }
    }
  }
}

// Two int8 layers with an activation between them, fused (the activated rows quantized as they
// leave the first layer's output pass): the same as the two applied one after the other, and a
// row's result its own in any batch.
TEST(Int8Matmul, ApplyThroughIsTheTwoLayersWithTheActivationBetween) {
  torch::manual_seed(6);
  const Int8Matmul first(torch::randn({256, 96}), torch::randn({256}));
  const Int8Matmul second(torch::randn({96, 256}), torch::randn({96}));
  int calls = 0;
  const PackedLinear::ActivateRows gelu = [&](const torch::Tensor& rows) {
    ++calls;
    torch::Tensor out = rows;
    torch::gelu_out(out, rows);
  };
  const torch::Tensor x = torch::randn({40, 96}) * 3;
  const torch::Tensor fused = first.ApplyThrough(x, gelu, second);
  EXPECT_GT(calls, 1);  // block by block
  const torch::Tensor apart = second.Apply(torch::gelu(first.Apply(x)));
  ASSERT_EQ(fused.sizes(), apart.sizes());
  // The same integers; the activation's float rounding (block by block, or all at once) may
  // move an activation across a rounding boundary by one level of 127.
  EXPECT_LT((fused - apart).abs().max().item<float>(), 0.02 * apart.abs().max().item<float>());
  for (int64_t at : {0, 17, 39}) {
    EXPECT_TRUE(
        torch::equal(first.ApplyThrough(x.narrow(0, at, 1), gelu, second), fused.narrow(0, at, 1)))
        << "row " << at;
  }
}

TEST(Int8Matmul, ZeroInputGivesTheBias) {
  const torch::Tensor b = torch::arange(16, torch::kFloat32);
  const Int8Matmul layer(torch::randn({16, 24}), b);
  EXPECT_TRUE(torch::allclose(layer.Apply(torch::zeros({5, 24})), b.expand({5, 16})));
}

}  // namespace
}  // namespace embedding::model_store
