#include "model_store/encoder/linear_layer.h"

#include <ATen/record_function.h>

#include <optional>

#include "model_store/kernels/fp32_matmul.h"
#include "model_store/kernels/int8_matmul.h"

namespace embedding::model_store {

namespace {

// `w`'s output rows [begin, begin + count), sharing its weights; nullopt where its packed
// layout does not split there.
std::optional<LinearWeights> OutputSlice(const LinearWeights& w, int64_t begin, int64_t count) {
  LinearWeights slice;
  slice.bias = w.bias.narrow(0, begin, count);
  if (w.packed) {
    slice.packed = w.packed->Columns(begin, count);
    if (!slice.packed) return std::nullopt;
  } else {
    slice.weight = w.weight.narrow(0, begin, count);
  }
  return slice;
}

}  // namespace

absl::Status PrepareLinearLayers(LinearKernel kernel, int64_t kv_heads, EncoderWeights* w) {
  for (LayerWeights& layer : w->layers) {
    if (kernel != LinearKernel::kDefault) {
      std::vector<LinearWeights*> linears = {&layer.qkv, &layer.attention_output, &layer.mlp_in,
                                             &layer.mlp_out};
      for (size_t e = 0; e < layer.moe_in.size(); ++e)
        linears.insert(linears.end(), {&layer.moe_in[e], &layer.moe_out[e]});
      // The router stays fp32 whatever the kernel: it ranks the experts, and a rounding that
      // swapped two would move a row by a whole expert.
      if (layer.moe_router.weight.defined()) {
        layer.moe_router.packed =
            std::make_shared<const Fp32Matmul>(layer.moe_router.weight, layer.moe_router.bias);
        layer.moe_router.weight = torch::Tensor();
      }
      for (LinearWeights* linear : linears) {
        if (!linear->weight.defined()) continue;  // an expert layer has no plain MLP
        if (kernel == LinearKernel::kInt8) {
          linear->packed = std::make_shared<const Int8Matmul>(linear->weight, linear->bias);
        } else {
          linear->packed = std::make_shared<const Fp32Matmul>(linear->weight, linear->bias);
        }
        linear->weight = torch::Tensor();  // the packed copy is all that is used
      }
    }
    const int64_t per_head = layer.qkv.bias.size(0) / kv_heads;
    layer.qkv_heads.clear();
    for (int64_t h = 0; h < kv_heads; ++h) {
      std::optional<LinearWeights> slice = OutputSlice(layer.qkv, h * per_head, per_head);
      if (!slice) {
        layer.qkv_heads.clear();
        break;
      }
      layer.qkv_heads.push_back(*std::move(slice));
    }
  }
  return absl::OkStatus();
}

torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::linear", std::vector<c10::IValue>());
  if (w.packed) return w.packed->Apply(x);
  return torch::linear(x, w.weight, w.bias);  // what torch::nn::functional::linear calls
}

}  // namespace embedding::model_store
