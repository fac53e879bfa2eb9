#include "model_store/encoder/dense_layers.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "model_store/encoder/encoder_weights.h"
#include "model_store/formats/checkpoint.h"

namespace embedding::model_store {
absl::StatusOr<torch::Tensor> ReadFp32Tensor(const Checkpoint& checkpoint, const std::string& where,
                                             const std::string& name, std::vector<int64_t> shape,
                                             const std::string& shape_source) {
  const TensorView* view = checkpoint.Find(name);
  if (view == nullptr) return absl::DataLossError(absl::StrCat(where, ": no tensor '", name, "'"));
  ASSIGN_OR_RETURN(torch::Tensor tensor, FloatingTensor(*view));
  if (tensor.sizes() != torch::IntArrayRef(shape)) {
    return absl::DataLossError(absl::StrCat(where, ": tensor '", name, "' has shape [",
                                            absl::StrJoin(tensor.sizes(), ", "), "]; expected [",
                                            absl::StrJoin(shape, ", "), "] (", shape_source, ")"));
  }
  tensor = tensor.to(torch::kFloat32).contiguous();
  if (!torch::isfinite(tensor).all().item<bool>()) {
    return absl::DataLossError(
        absl::StrCat(where, ": tensor '", name, "' holds NaN or infinite values"));
  }
  return tensor;
}

absl::StatusOr<std::vector<DenseLayer>> LoadDenseLayers(
    const std::vector<DenseModuleConfig>& modules, int64_t hidden_size) {
  std::vector<DenseLayer> layers;
  int64_t inputs = hidden_size;
  for (const DenseModuleConfig& module : modules) {
    if (module.in_features != inputs) {
      return absl::DataLossError(absl::StrCat(
          module.dir, "/config.json: in_features ", module.in_features, " does not match the ",
          layers.empty() ? "model's hidden_size " : "previous Dense module's out_features ",
          inputs));
    }
    ASSIGN_OR_RETURN(auto checkpoint, Checkpoint::Open(module.dir));
    DenseLayer layer;
    layer.activation = module.activation;
    const std::string where = absl::StrCat(module.dir, "/", checkpoint->layout());
    constexpr char kSource[] = "its config.json in_features, out_features";
    ASSIGN_OR_RETURN(layer.weight, ReadFp32Tensor(*checkpoint, where, "linear.weight",
                                                  {module.out_features, module.in_features},
                                                  kSource));
    if (module.bias) {
      ASSIGN_OR_RETURN(layer.bias, ReadFp32Tensor(*checkpoint, where, "linear.bias",
                                                  {module.out_features}, kSource));
    }
    layers.push_back(std::move(layer));
    inputs = module.out_features;
  }
  return layers;
}

torch::Tensor ApplyDenseLayers(const std::vector<DenseLayer>& layers, torch::Tensor pooled) {
  // Row by row: BLAS blocks a product by its row count, so one pooled vector projected among
  // N others rounded differently than alone (2.4e-7 on a Gemma3 fixture's vector, fp32, found
  // by the batch-invariance probe at load). A row's product is [1, in] x [in, out] wherever it
  // comes from, at a cost far below one encoder layer's.
  if (pooled.size(0) > 1) {
    std::vector<torch::Tensor> rows;
    for (int64_t r = 0; r < pooled.size(0); ++r)
      rows.push_back(ApplyDenseLayers(layers, pooled.slice(0, r, r + 1)));
    return torch::cat(rows);
  }
  return ProjectTokens(layers, std::move(pooled));
}

torch::Tensor ProjectTokens(const std::vector<DenseLayer>& layers, torch::Tensor pooled) {
  for (const DenseLayer& layer : layers) {
    pooled = layer.bias.defined() ? torch::addmm(layer.bias, pooled, layer.weight.t())
                                  : torch::mm(pooled, layer.weight.t());
    if (layer.activation == "Tanh") {
      pooled = torch::tanh(pooled);
    } else if (layer.activation == "ReLU") {
      pooled = torch::relu(pooled);
    } else if (layer.activation == "GELU") {
      pooled = torch::gelu(pooled);  // torch.nn.GELU's default: exact erf
    } else if (layer.activation == "GELUTanh") {
      pooled = torch::gelu(pooled, "tanh");
    } else if (layer.activation == "SiLU") {
      pooled = torch::silu(pooled);
    } else if (layer.activation == "Sigmoid") {
      pooled = torch::sigmoid(pooled);
    }  // Identity
    if (layer.norm_weight.defined()) {
      pooled = torch::layer_norm(pooled, {pooled.size(-1)}, layer.norm_weight, layer.norm_bias,
                                 layer.norm_eps);
    }
  }
  return pooled.contiguous();
}

}  // namespace embedding::model_store
