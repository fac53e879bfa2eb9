#include "model_store/encoder/token_heads.h"

#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "model_store/encoder/encoder_weights.h"
#include "model_store/formats/checkpoint.h"

namespace embedding::model_store {
namespace {

// bge-m3's heads are 4 KB and 4 MB; anything far larger is not a head file.
constexpr uintmax_t kMaxHeadFileBytes = 256u << 20;
// A ColBERT head wider than this is not one.
constexpr int64_t kMaxMultiVectorDim = 16384;

// Every tensor of a head file (safetensors or torch.save's zip), floating, in its own dtype.
absl::StatusOr<std::map<std::string, torch::Tensor>> ReadHeadTensors(const std::string& path) {
  ASSIGN_OR_RETURN(auto file, OpenTensorFile(path));
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, view] : file->tensors()) {
    ASSIGN_OR_RETURN(tensors[name], FloatingTensor(view));
  }
  return tensors;
}

// The head's file, or "" when the model has none.
std::string HeadFile(const std::string& model_dir, const std::string& head) {
  for (const char* ext : {".safetensors", ".pt"}) {
    const std::string path = model_dir + "/" + head + ext;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// A Linear(hidden -> out) head: exactly `weight` [out, hidden] and `bias` [out], finite, as
// fp32. `out` 0 accepts any width in [1, kMaxMultiVectorDim].
absl::Status LoadLinearHead(const std::string& path, int64_t hidden, int64_t out,
                            torch::Tensor* weight, torch::Tensor* bias) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error || size > kMaxHeadFileBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", error ? error.message() : "larger than ",
                     error ? "" : absl::StrCat(kMaxHeadFileBytes >> 20, " MiB")));
  }
  ASSIGN_OR_RETURN(auto tensors, ReadHeadTensors(path));
  for (const auto& [name, tensor] : tensors) {
    if (name != "weight" && name != "bias") {
      return absl::DataLossError(absl::StrCat(path, ": unexpected tensor '", name,
                                              "'; a head holds exactly 'weight' and 'bias'"));
    }
  }
  for (const char* name : {"weight", "bias"}) {
    if (tensors.count(name) == 0)
      return absl::DataLossError(absl::StrCat(path, ": missing tensor '", name, "'"));
  }
  const torch::Tensor& w = tensors["weight"];
  const torch::Tensor& b = tensors["bias"];
  const int64_t rows = w.dim() == 2 ? w.size(0) : -1;
  const bool width_ok = out > 0 ? rows == out : rows >= 1 && rows <= kMaxMultiVectorDim;
  if (w.dim() != 2 || w.size(1) != hidden || !width_ok) {
    return absl::DataLossError(absl::StrCat(
        path, ": tensor 'weight' has shape [", absl::StrJoin(w.sizes(), ", "), "]; expected [",
        out > 0 ? absl::StrCat(out) : absl::StrCat("1..", kMaxMultiVectorDim), ", ", hidden,
        "] (config.json hidden_size)"));
  }
  if (b.dim() != 1 || b.size(0) != rows) {
    return absl::DataLossError(absl::StrCat(path, ": tensor 'bias' has shape [",
                                            absl::StrJoin(b.sizes(), ", "), "]; expected [", rows,
                                            "]"));
  }
  *weight = w.to(torch::kFloat32).contiguous();
  *bias = b.to(torch::kFloat32).contiguous();
  for (const auto& [name, t] : {std::pair{"weight", *weight}, std::pair{"bias", *bias}}) {
    if (!torch::isfinite(t).all().item<bool>()) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensor '", name, "' holds NaN or infinite values"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenHeads> LoadTokenHeads(const std::string& model_dir, int64_t hidden_size) {
  TokenHeads heads;
  if (std::string path = HeadFile(model_dir, "sparse_linear"); !path.empty()) {
    RETURN_IF_ERROR(LoadLinearHead(path, hidden_size, 1, &heads.sparse_weight, &heads.sparse_bias));
  }
  if (std::string path = HeadFile(model_dir, "colbert_linear"); !path.empty()) {
    RETURN_IF_ERROR(
        LoadLinearHead(path, hidden_size, 0, &heads.colbert_weight, &heads.colbert_bias));
  }
  return heads;
}

absl::StatusOr<std::vector<DenseLayer>> LoadLateProjection(const LateInteractionConfig& config,
                                                           std::vector<DenseLayer> dense,
                                                           int64_t hidden_size,
                                                           const Checkpoint& checkpoint) {
  if (!config.projection_in_checkpoint) {
    if (dense.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          config.layout, ": modules.json lists no Dense projection after the Transformer; "
                         "PyLate would add an untrained one, so there is nothing to serve"));
    }
    return dense;
  }
  const TensorView* view = checkpoint.Find("linear.weight");
  if (view == nullptr || view->shape.size() != 2 || view->shape[0] < 1 ||
      view->shape[0] > kMaxMultiVectorDim) {
    return absl::DataLossError(absl::StrCat(
        config.layout, ": the checkpoint holds no tensor 'linear.weight' shaped [1..",
        kMaxMultiVectorDim, ", hidden], the projection"));
  }
  DenseLayer layer;
  layer.activation = "Identity";
  ASSIGN_OR_RETURN(layer.weight,
                   ReadFp32Tensor(checkpoint, checkpoint.layout(), "linear.weight",
                                  {view->shape[0], hidden_size}, "config.json hidden_size"));
  return std::vector<DenseLayer>{std::move(layer)};
}

}  // namespace embedding::model_store
