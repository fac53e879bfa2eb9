#include "model_store/encoder_weights.h"

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace embedding::model_store {
namespace {

torch::ScalarType TorchType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return torch::kFloat32;
    case DType::kF16:
      return torch::kFloat16;
    case DType::kBF16:
      return torch::kBFloat16;
  }
  return torch::kFloat32;
}

class Binder {
 public:
  Binder(const Checkpoint& checkpoint, std::string prefix, torch::ScalarType dtype)
      : checkpoint_(checkpoint), prefix_(std::move(prefix)), dtype_(dtype) {}

  // Copies the tensor out of the mapping (which may be unaligned) and converts it to `dtype`
  // (the compute dtype unless given).
  absl::StatusOr<torch::Tensor> Take(const std::string& name, std::vector<int64_t> shape,
                                     std::optional<torch::ScalarType> dtype = std::nullopt) {
    const std::string full = prefix_ + name;
    const TensorView* view = checkpoint_.Find(full);
    if (view == nullptr) return absl::DataLossError(absl::StrCat("missing tensor '", full, "'"));
    if (view->shape != shape) {
      return absl::DataLossError(absl::StrCat(
          view->file, ": tensor '", full, "' has shape [", absl::StrJoin(view->shape, ", "),
          "] but config.json implies [", absl::StrJoin(shape, ", "), "]"));
    }
    torch::Tensor raw = torch::empty(shape, torch::TensorOptions().dtype(TorchType(view->dtype)));
    std::memcpy(raw.data_ptr(), view->data, view->size_bytes);
    return raw.to(dtype.value_or(dtype_)).contiguous();
  }

  absl::StatusOr<LinearWeights> Linear(const std::string& name, int64_t out, int64_t in) {
    LinearWeights linear;
    ASSIGN_OR_RETURN(linear.weight, Take(name + ".weight", {out, in}));
    ASSIGN_OR_RETURN(linear.bias, Take(name + ".bias", {out}));
    return linear;
  }

  // LayerNorm runs in fp32 whatever the compute dtype (see NormWeights).
  absl::StatusOr<NormWeights> Norm(const std::string& name, int64_t size) {
    NormWeights norm;
    ASSIGN_OR_RETURN(norm.weight, Take(name + ".weight", {size}, torch::kFloat32));
    ASSIGN_OR_RETURN(norm.bias, Take(name + ".bias", {size}, torch::kFloat32));
    return norm;
  }

 private:
  const Checkpoint& checkpoint_;
  std::string prefix_;
  torch::ScalarType dtype_;
};

}  // namespace

absl::StatusOr<EncoderWeights> BindEncoderWeights(const EncoderConfig& config,
                                                  const ArchitectureSpec& spec,
                                                  const Checkpoint& checkpoint,
                                                  torch::ScalarType dtype) {
  const std::string probe = spec.word_embeddings + ".weight";
  const std::string* prefix = nullptr;
  for (const auto& candidate : spec.weight_prefixes) {
    if (checkpoint.Find(candidate + probe) != nullptr) {
      prefix = &candidate;
      break;
    }
  }
  if (prefix == nullptr) {
    return absl::DataLossError(absl::StrCat("missing tensor '", probe, "' (tried prefixes '",
                                            absl::StrJoin(spec.weight_prefixes, "', '"), "')"));
  }
  Binder bind(checkpoint, *prefix, dtype);
  const int64_t h = config.hidden_size;
  EncoderWeights w;
  ASSIGN_OR_RETURN(w.word_embeddings,
                   bind.Take(spec.word_embeddings + ".weight", {config.vocab_size, h}));
  ASSIGN_OR_RETURN(w.position_embeddings, bind.Take(spec.position_embeddings + ".weight",
                                                    {config.max_position_embeddings, h}));
  ASSIGN_OR_RETURN(w.token_type_embeddings,
                   bind.Take(spec.token_type_embeddings + ".weight", {config.type_vocab_size, h}));
  ASSIGN_OR_RETURN(w.embeddings_norm, bind.Norm(spec.embeddings_norm, h));
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat(spec.layer_prefix, i, ".");
    LayerWeights layer;
    ASSIGN_OR_RETURN(LinearWeights query, bind.Linear(p + spec.query, h, h));
    ASSIGN_OR_RETURN(LinearWeights key, bind.Linear(p + spec.key, h, h));
    ASSIGN_OR_RETURN(LinearWeights value, bind.Linear(p + spec.value, h, h));
    layer.qkv.weight = torch::cat({query.weight, key.weight, value.weight}, 0).contiguous();
    layer.qkv.bias = torch::cat({query.bias, key.bias, value.bias}, 0).contiguous();
    ASSIGN_OR_RETURN(layer.attention_output, bind.Linear(p + spec.attention_output, h, h));
    ASSIGN_OR_RETURN(layer.attention_norm, bind.Norm(p + spec.attention_norm, h));
    ASSIGN_OR_RETURN(layer.intermediate,
                     bind.Linear(p + spec.intermediate, config.intermediate_size, h));
    ASSIGN_OR_RETURN(layer.output, bind.Linear(p + spec.output, h, config.intermediate_size));
    ASSIGN_OR_RETURN(layer.output_norm, bind.Norm(p + spec.output_norm, h));
    w.layers.push_back(std::move(layer));
  }
  return w;
}

}  // namespace embedding::model_store
