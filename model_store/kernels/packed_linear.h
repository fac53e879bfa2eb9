// Internal to model_store: a linear layer whose weights were prepared once, at load, for the
// kernel that applies them (fp32_matmul.h, int8_matmul.h). Included by encoder_weights.h.
#pragma once

#include <torch/types.h>

#include <memory>

namespace embedding::model_store {

class PackedLinear {
 public:
  virtual ~PackedLinear() = default;
  // x [rows, in] -> x weight^T + bias, [rows, out] fp32. Thread-safe.
  virtual torch::Tensor Apply(const torch::Tensor& x) const = 0;
  // The layer restricted to output columns [begin, begin + count): its weights are a view of
  // these (no copy). Null where the packed layout does not split there.
  virtual std::shared_ptr<const PackedLinear> Columns(int64_t begin, int64_t count) const = 0;
  // Row counts with a built primitive (each is built once, on first use).
  virtual size_t primitives() const = 0;
};

}  // namespace embedding::model_store
