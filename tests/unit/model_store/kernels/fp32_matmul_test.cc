// The fp32 linear layer on oneDNN against torch's own linear (addmm), at the row counts the
// encoder produces, with weights packed for this CPU's kernel or kept plain.
#include "model_store/kernels/fp32_matmul.h"

#include <gtest/gtest.h>

namespace embedding::model_store {
namespace {

TEST(Fp32Matmul, EqualsTorchLinearAtEveryRowCount) {
  torch::manual_seed(5);
  for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 80}, {3072, 768}, {768, 3072}}) {
    const torch::Tensor w = torch::randn({out, in}) / std::sqrt(static_cast<double>(in));
    const torch::Tensor b = torch::randn({out});
    const Fp32Matmul layer(w, b);
    for (int64_t rows : {1, 7, 64, 513}) {
      SCOPED_TRACE(testing::Message() << rows << " x " << in << " x " << out
                                      << (layer.packed() ? " packed" : " plain"));
      const torch::Tensor x = torch::randn({rows, in});
      const torch::Tensor got = layer.Apply(x);
      ASSERT_EQ(got.sizes(), (std::vector<int64_t>{rows, out}));
      const torch::Tensor want =
          torch::addmm(b.to(torch::kFloat64), x.to(torch::kFloat64), w.t().to(torch::kFloat64));
      EXPECT_LT((got.to(torch::kFloat64) - want).abs().max().item<double>(), 1e-4);
    }
    EXPECT_EQ(layer.primitives(), 4u);
  }
}

TEST(Fp32Matmul, WithoutBiasAndFromANonContiguousInput) {
  torch::manual_seed(6);
  const torch::Tensor w = torch::randn({32, 64});
  const Fp32Matmul layer(w, torch::Tensor());
  const torch::Tensor x = torch::randn({64, 10}).t();  // [10, 64], column-major
  EXPECT_TRUE(torch::allclose(layer.Apply(x), torch::mm(x, w.t()), 1e-5, 1e-4));
  EXPECT_TRUE(torch::equal(layer.Apply(torch::zeros({3, 64})), torch::zeros({3, 32})));
}

}  // namespace
}  // namespace embedding::model_store
