// Internal to model_store: an fp32 linear layer on oneDNN's matmul with its weights packed once,
// at load, in the layout the matmul reads. Included only by linear_layer.cc.
//
// Why not LibTorch 1.13's mkldnn_linear: it reorders the weights into its kernel's layout on
// every call and converts activations in and out of oneDNN tensors through the reference
// reorder (ONEDNN_VERBOSE on a BERT-base forward of 512 tokens, Xeon with AMX, 2 threads:
// 86 ms of weight reorders and about 100 ms of conversions in 1.1 s).
#pragma once

#include <torch/types.h>

#include <memory>

#include "model_store/kernels/packed_linear.h"

namespace embedding::model_store {

class Fp32Matmul final : public PackedLinear {
 public:
  // `weight` [out, in] and `bias` [out] (or undefined), any float dtype; both are copied.
  Fp32Matmul(const torch::Tensor& weight, const torch::Tensor& bias);
  ~Fp32Matmul() override;

  // x [rows, in] fp32 -> x weight^T + bias, [rows, out] fp32, exact to fp32 rounding.
  torch::Tensor Apply(const torch::Tensor& x) const override;
  std::shared_ptr<const PackedLinear> Columns(int64_t begin, int64_t count) const override;
  size_t primitives() const override;

  // True when the weights are held in a blocked layout of oneDNN's choosing, false when the
  // kernel's preferred layout varies with the row count and the plain one is kept.
  bool packed() const;

 private:
  struct State;
  explicit Fp32Matmul(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace embedding::model_store
