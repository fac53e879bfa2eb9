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
      for (LinearWeights* linear :
           {&layer.qkv, &layer.attention_output, &layer.mlp_in, &layer.mlp_out}) {
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
