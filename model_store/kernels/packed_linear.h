// Internal to model_store: a linear layer whose weights were prepared once, at load, for the
// kernel that applies them (fp32_matmul.h, int8_matmul.h). Included by encoder_weights.h.
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>

namespace embedding::model_store {

class PackedLinear {
 public:
  // Activates, in place, a block of rows of a layer's fp32 output ([some rows, out]).
  using ActivateRows = std::function<void(const torch::Tensor& rows)>;

  virtual ~PackedLinear() = default;
  // x [rows, in] -> x weight^T + bias, [rows, out] fp32. Thread-safe.
  virtual torch::Tensor Apply(const torch::Tensor& x) const = 0;
  // next.Apply(activate(Apply(x))): a feed-forward block's two layers and the activation
  // between them. Here one after the other; int8 layers (int8_matmul.h) fuse the first one's
  // output pass, the activation and the second one's quantization, block by block of rows.
  virtual torch::Tensor ApplyThrough(const torch::Tensor& x, const ActivateRows& activate,
                                     const PackedLinear& next) const {
    const torch::Tensor hidden = Apply(x);
    activate(hidden);
    return next.Apply(hidden);
  }
  // The layer restricted to output columns [begin, begin + count): its weights are a view of
  // these (no copy). Null where the packed layout does not split there.
  virtual std::shared_ptr<const PackedLinear> Columns(int64_t begin, int64_t count) const = 0;
  // Row counts with a built primitive (each is built once, on first use).
  virtual size_t primitives() const = 0;
};

}  // namespace embedding::model_store
