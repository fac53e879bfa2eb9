#include "model_store/linear_layer.h"

#include "model_store/int8_matmul.h"

namespace embedding::model_store {

absl::Status PrepareLinearLayers(LinearKernel kernel, EncoderWeights* w) {
  if (kernel == LinearKernel::kDefault) return absl::OkStatus();
  if (!at::hasMKLDNN() && kernel == LinearKernel::kOneDnn) {
    return absl::OkStatus();  // fp32 then runs through torch's default path, slower but exact
  }
  for (LayerWeights& layer : w->layers) {
    for (LinearWeights* linear :
         {&layer.qkv, &layer.attention_output, &layer.mlp_in, &layer.mlp_out}) {
      if (kernel == LinearKernel::kInt8) {
        linear->int8 = std::make_shared<const Int8Matmul>(linear->weight, linear->bias);
        linear->weight = torch::Tensor();  // the quantised copy is all that is used
      } else {
        linear->weight = linear->weight.to_mkldnn();
      }
    }
  }
  return absl::OkStatus();
}

torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w) {
  if (w.int8) return w.int8->Apply(x);
  if (w.weight.is_mkldnn()) return at::mkldnn_linear(x.to_mkldnn(), w.weight, w.bias).to_dense();
  return torch::linear(x, w.weight, w.bias);  // what torch::nn::functional::linear calls
}

}  // namespace embedding::model_store
