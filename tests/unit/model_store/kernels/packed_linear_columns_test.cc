// A packed linear layer's column slice (PackedLinear::Columns, which long windows use to project
// one head at a time) against the same columns of the whole layer, for both kernels.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "model_store/kernels/fp32_matmul.h"
#include "model_store/kernels/int8_matmul.h"

namespace embedding::model_store {
namespace {

using MakeLayer = std::function<std::shared_ptr<const PackedLinear>(const torch::Tensor& weight,
                                                                    const torch::Tensor& bias)>;

const std::pair<const char*, MakeLayer> kKernels[] = {
    {"fp32", [](const torch::Tensor& w,
                const torch::Tensor& b) { return std::make_shared<const Fp32Matmul>(w, b); }},
    {"int8", [](const torch::Tensor& w,
                const torch::Tensor& b) { return std::make_shared<const Int8Matmul>(w, b); }},
};

double MaxAbs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

// Heads of 64 (a BERT-base qkv and the small test model's) must split at every head: their 192
// columns are whole blocks of every oneDNN weight layout, which blocks columns by at most 64.
// Heads of 16 (the tiny models', 48 columns) split only where the layout is plain or blocked
// by 16, and where one does it must still be those columns.
TEST(PackedLinearColumns, EveryHeadsSliceIsThoseColumnsOfTheWholeLayer) {
  struct Shape {
    int64_t in, heads, head_dim;
  };
  for (const auto& [name, make] : kKernels) {
    for (const Shape shape : {Shape{768, 12, 64}, Shape{256, 4, 64}, Shape{80, 3, 16}}) {
      const int64_t width = 3 * shape.head_dim, out = shape.heads * width;
      SCOPED_TRACE(testing::Message() << name << " " << shape.in << " -> " << out);
      torch::manual_seed(out);
      const torch::Tensor w =
          torch::randn({out, shape.in}) * torch::linspace(0.1, 3, out).unsqueeze(1);
      const torch::Tensor b = torch::randn({out}) * 5;
      const auto layer = make(w, b);
      std::vector<std::shared_ptr<const PackedLinear>> slices;
      for (int64_t h = 0; h < shape.heads; ++h) {
        slices.push_back(layer->Columns(h * width, width));
        if (shape.head_dim % 64 == 0) ASSERT_NE(slices.back(), nullptr) << "head " << h;
      }
      for (int64_t rows : {1, 7, 513, 4160}) {
        const torch::Tensor x = torch::randn({rows, shape.in}) * 2 + 0.5;
        const torch::Tensor whole = layer->Apply(x);
        for (int64_t h = 0; h < shape.heads; ++h) {
          if (slices[h] == nullptr) continue;
          const torch::Tensor want = whole.slice(1, h * width, (h + 1) * width);
          const torch::Tensor got = slices[h]->Apply(x);
          ASSERT_EQ(got.sizes(), want.sizes());
          EXPECT_EQ(MaxAbs(got - want), 0) << rows << " rows, head " << h;
        }
      }
    }
  }
}

// A slice that starts inside a layout block is refused; where the layout is plain it is
// served, and then it must still be those columns.
TEST(PackedLinearColumns, ASliceOffTheBlocksIsRefusedOrExact) {
  for (const auto& [name, make] : kKernels) {
    SCOPED_TRACE(name);
    torch::manual_seed(9);
    const torch::Tensor w = torch::randn({2304, 768});
    const auto layer = make(w, torch::randn({2304}));
    const auto slice = layer->Columns(40, 72);
    if (slice == nullptr) continue;
    const torch::Tensor x = torch::randn({64, 768});
    const torch::Tensor want = layer->Apply(x).slice(1, 40, 112);
    EXPECT_LE(MaxAbs(slice->Apply(x) - want), 1e-6 * (1 + MaxAbs(want)));
  }
}

}  // namespace
}  // namespace embedding::model_store
