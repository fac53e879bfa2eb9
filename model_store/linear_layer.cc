#include "model_store/linear_layer.h"

#include <ATen/record_function.h>

#include "model_store/fp32_matmul.h"
#include "model_store/int8_matmul.h"

namespace embedding::model_store {

absl::Status PrepareLinearLayers(LinearKernel kernel, EncoderWeights* w) {
  if (kernel == LinearKernel::kDefault) return absl::OkStatus();
  for (LayerWeights& layer : w->layers) {
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
  return absl::OkStatus();
}

torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::linear", std::vector<c10::IValue>());
  if (w.packed) return w.packed->Apply(x);
  return torch::linear(x, w.weight, w.bias);  // what torch::nn::functional::linear calls
}

}  // namespace embedding::model_store
