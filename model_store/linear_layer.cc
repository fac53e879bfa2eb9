#include "model_store/linear_layer.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>

namespace embedding::model_store {
namespace {

c10::OperatorHandle QuantizedOp(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// Weights int8 with one scale per output row (symmetric): per-row scales keep a row of small
// weights from losing its precision to another row's outliers, at no measured cost (512 x 768
// x 3072 at 2 threads: 966-1,034 GOP/s per row against 965-974 per tensor).
c10::IValue PackInt8(const LinearWeights& w) {
  const torch::Tensor scales = (w.weight.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);
  const torch::Tensor zeros = torch::zeros({w.weight.size(0)}, torch::kLong);
  const torch::Tensor q = torch::quantize_per_channel(w.weight, scales, zeros, 0, torch::kQInt8);
  std::vector<c10::IValue> stack{q, w.bias};
  QuantizedOp("quantized::linear_prepack").callBoxed(&stack);
  return stack.at(0);
}

}  // namespace

absl::Status PrepareLinearLayers(LinearKernel kernel, EncoderWeights* w) {
  if (kernel == LinearKernel::kDefault) return absl::OkStatus();
  if (!at::hasMKLDNN()) {
    // fp32 then runs through torch's default path, slower but exact; int8 has no other path.
    if (kernel == LinearKernel::kOneDnn) return absl::OkStatus();
    return absl::FailedPreconditionError("dtype int8 needs a LibTorch with oneDNN: use fp32");
  }
  if (kernel == LinearKernel::kInt8) {
    // oneDNN's engine, not QNNPACK (written for ARM) and not fbgemm (absent in Debian's
    // LibTorch 1.13): 512 x 768 x 3072 ran at 870-1,030 GOP/s against 168 GFLOP/s in fp32.
    const auto& engines = at::globalContext().supportedQEngines();
    if (std::find(engines.begin(), engines.end(), at::QEngine::ONEDNN) == engines.end()) {
      return absl::FailedPreconditionError(
          "dtype int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
    }
    at::globalContext().setQEngine(at::QEngine::ONEDNN);
  }
  for (LayerWeights& layer : w->layers) {
    for (LinearWeights* linear :
         {&layer.qkv, &layer.attention_output, &layer.intermediate, &layer.output}) {
      if (kernel == LinearKernel::kInt8) {
        linear->int8_packed = PackInt8(*linear);
        linear->weight = torch::Tensor();  // the packed copy is all that is used
      } else {
        linear->weight = linear->weight.to_mkldnn();
      }
    }
  }
  return absl::OkStatus();
}

torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w) {
  if (!w.int8_packed.isNone()) {
    // reduce_range off: oneDNN computes int8 products in 32 bits, so the full 8-bit range of
    // the activations is safe (the 7-bit fallback exists for fbgemm's 16-bit accumulation).
    std::vector<c10::IValue> stack{x, w.int8_packed, false};
    static const c10::OperatorHandle op = QuantizedOp("quantized::linear_dynamic");
    op.callBoxed(&stack);
    return stack.at(0).toTensor();
  }
  if (w.weight.is_mkldnn()) return at::mkldnn_linear(x.to_mkldnn(), w.weight, w.bias).to_dense();
  return torch::nn::functional::linear(x, w.weight, w.bias);
}

}  // namespace embedding::model_store
