// Internal to model_store: a dynamic int8 linear layer on oneDNN's own matmul (the libdnnl that
// LibTorch itself links). Included only by linear_layer.cc.
//
// Why not LibTorch 1.13's quantized::linear_dynamic: it keeps its int8 weights transposed and
// reorders a full copy of them on every call (DNNL_VERBOSE: 0.5-4 ms per call for BERT-base's
// layers), and a 131,072-token document grew a BERT-base server by 454-547 MiB through it.
// Here the weights are packed once, at load, in the layout the matmul reads (AMX's or VNNI's
// blocks where the CPU has them), the activations are quantised row by row in one pass of our
// own (row_quantize.h), and each row's scale is applied after the kernel, so one primitive per
// row count serves every call.
#pragma once

#include <torch/types.h>

#include <memory>
#include <utility>

#include "model_store/kernels/packed_linear.h"

namespace embedding::model_store {

class Int8Matmul final : public PackedLinear {
 public:
  // Quantises `weight` [out, in] to int8 symmetric per output row: per-row scales keep a row of
  // small weights from losing its precision to another row's outliers.
  Int8Matmul(const torch::Tensor& weight, const torch::Tensor& bias);
  ~Int8Matmul() override;

  // x [rows, in] fp32 -> x weight^T + bias, [rows, out] fp32. Each row of activations is
  // quantised on its own (symmetric, 127 levels each side of 0), so a row's result does not
  // depend on the other rows: the same text gives the same vector in any batch.
  torch::Tensor Apply(const torch::Tensor& x) const override;
  // Into another Int8Matmul, the activated rows are quantized for it as they leave this
  // layer's output pass, never stored in fp32 for a pass of their own.
  torch::Tensor ApplyThrough(const torch::Tensor& x, const ActivateRows& activate,
                             const PackedLinear& next) const override;
  std::shared_ptr<const PackedLinear> Columns(int64_t begin, int64_t count) const override;
  size_t primitives() const override;

 private:
  struct State;
  explicit Int8Matmul(std::unique_ptr<State> state);
  // The kernel's product of quantized rows `q` [rows, in] (uint8), before any scale: fp32
  // [rows, out].
  torch::Tensor Product(const torch::Tensor& q) const;
  // x quantized row by row: uint8 [rows, in] and each row's scale.
  std::pair<torch::Tensor, torch::Tensor> Quantize(const torch::Tensor& x) const;
  // Apply on rows already quantized, `q` with its `row_scales`.
  torch::Tensor ApplyQuantized(const torch::Tensor& q, const torch::Tensor& row_scales) const;
  std::unique_ptr<State> state_;
};

}  // namespace embedding::model_store
