#include "model_store/encoder/encoder_weights.h"

#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace embedding::model_store {
torch::ScalarType TorchType(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return torch::kFloat64;
    case DType::kF16:
      return torch::kFloat16;
    case DType::kBF16:
      return torch::kBFloat16;
    default:  // only floating tensors are converted (FloatingTensor refuses the rest)
      return torch::kFloat32;
  }
}

absl::StatusOr<torch::Tensor> FloatingTensor(const TensorView& view) {
  if (!IsFloating(view.dtype)) {
    return absl::DataLossError(absl::StrCat(view.file, ": tensor '", view.name, "' has dtype ",
                                            DTypeName(view.dtype), "; a weight must be one of ",
                                            FloatingDTypeNames()));
  }
  torch::Tensor t = torch::empty(view.shape, torch::TensorOptions().dtype(TorchType(view.dtype)));
  std::memcpy(t.data_ptr(), view.data, view.size_bytes);
  return t;
}

absl::StatusOr<torch::Tensor> FloatingRows(const TensorView& view,
                                           const std::vector<int32_t>& rows) {
  if (!IsFloating(view.dtype) || view.shape.size() != 2) {
    return absl::DataLossError(absl::StrCat(view.file, ": tensor '", view.name, "' has dtype ",
                                            DTypeName(view.dtype), " and ", view.shape.size(),
                                            " dimensions; rows are read from a 2-D ",
                                            FloatingDTypeNames(), " tensor"));
  }
  const size_t row_bytes = static_cast<size_t>(view.shape[1]) * DTypeSize(view.dtype);
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size()), view.shape[1]},
                                 torch::TensorOptions().dtype(TorchType(view.dtype)));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= view.shape[0]) {
      return absl::DataLossError(absl::StrCat(view.file, ": tensor '", view.name, "' has ",
                                              view.shape[0], " rows; row ", rows[i], " asked"));
    }
    std::memcpy(static_cast<uint8_t*>(t.data_ptr()) + i * row_bytes,
                view.data + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return t;
}

namespace {

class Binder {
 public:
  Binder(const Checkpoint& checkpoint, std::string prefix, torch::ScalarType dtype,
         double norm_offset)
      : checkpoint_(checkpoint),
        prefix_(std::move(prefix)),
        dtype_(dtype),
        norm_offset_(norm_offset) {}

  // Copies the tensor out of the mapping (which may be unaligned) and converts it to `dtype`
  // (the compute dtype unless given). A weight torch saved under a parametrization (jina's
  // adapters) is read from `<name>.parametrizations.weight.original`.
  absl::StatusOr<torch::Tensor> Take(const std::string& name, std::vector<int64_t> shape,
                                     std::optional<torch::ScalarType> dtype = std::nullopt) {
    std::string full = prefix_ + name;
    const TensorView* view = checkpoint_.Find(full);
    if (view == nullptr && absl::EndsWith(full, ".weight")) {
      const std::string original = Parametrized(name.substr(0, name.size() - 7), "original");
      if ((view = checkpoint_.Find(original)) != nullptr) full = original;
    }
    if (view == nullptr) return absl::DataLossError(absl::StrCat("missing tensor '", full, "'"));
    if (view->shape != shape) {
      return absl::DataLossError(absl::StrCat(
          view->file, ": tensor '", full, "' has shape [", absl::StrJoin(view->shape, ", "),
          "] but config.json implies [", absl::StrJoin(shape, ", "), "]"));
    }
    ASSIGN_OR_RETURN(torch::Tensor raw, FloatingTensor(*view));
    // A NaN or infinite weight once loaded and served NaN vectors with status OK.
    if (!torch::isfinite(raw).all().item<bool>()) {
      return absl::DataLossError(
          absl::StrCat(view->file, ": tensor '", full, "' holds NaN or infinite values"));
    }
    return raw.to(dtype.value_or(dtype_)).contiguous();
  }

  // `bias` false: the config says the layer has none, and it gets zeros, so every linear layer
  // runs the same kernel.
  absl::StatusOr<LinearWeights> Linear(const std::string& name, int64_t out, int64_t in,
                                       bool bias) {
    LinearWeights linear;
    ASSIGN_OR_RETURN(linear.weight, Take(name + ".weight", {out, in}));
    ASSIGN_OR_RETURN(linear.adapters, Adapters(name, out, in, /*table=*/false));
    if (bias) {
      ASSIGN_OR_RETURN(linear.bias, Take(name + ".bias", {out}));
    } else {
      linear.bias = torch::zeros({out}, torch::TensorOptions().dtype(dtype_));
    }
    return linear;
  }

  // The task adapters of layer `name` ([out, in]), or null where the config names none or the
  // checkpoint has none for it. jina's LoRAParametrization stores a linear layer's as lora_A
  // [tasks, rank, in] and lora_B [tasks, out, rank] (W + B_t A_t), an embedding table's
  // ([rows = out, hidden = in]) as lora_A [tasks, rows, rank] and lora_B [tasks, rank, hidden]
  // (W + A_t B_t); both scaled by lora_alpha / lora_rank.
  absl::StatusOr<std::shared_ptr<const LowRankAdapters>> Adapters(const std::string& name,
                                                                  int64_t out, int64_t in,
                                                                  bool table) {
    const int64_t tasks = static_cast<int64_t>(config_adapters_), rank = adapter_rank_;
    if (tasks == 0 || checkpoint_.Find(Parametrized(name, "0.lora_A")) == nullptr) return nullptr;
    const auto fp32 = torch::kFloat32;
    ASSIGN_OR_RETURN(const torch::Tensor a, Take(name + ".parametrizations.weight.0.lora_A",
                                                 table ? std::vector<int64_t>{tasks, out, rank}
                                                       : std::vector<int64_t>{tasks, rank, in},
                                                 fp32));
    ASSIGN_OR_RETURN(const torch::Tensor b, Take(name + ".parametrizations.weight.0.lora_B",
                                                 table ? std::vector<int64_t>{tasks, rank, in}
                                                       : std::vector<int64_t>{tasks, out, rank},
                                                 fp32));
    auto adapters = std::make_shared<LowRankAdapters>();
    for (int64_t t = 0; t < tasks; ++t) {
      adapters->down.push_back(a[t].contiguous());
      adapters->up.push_back(((table ? b[t] : b[t].t()) * adapter_scale_).contiguous());
    }
    return adapters;
  }

  void SetAdapters(size_t count, int64_t rank, double scale) {
    config_adapters_ = count;
    adapter_rank_ = rank;
    adapter_scale_ = scale;
  }

  // Norms run in fp32 whatever the compute dtype (see NormWeights).
  absl::StatusOr<NormWeights> Norm(const std::string& name, int64_t size, bool bias, bool rms) {
    NormWeights norm;
    norm.rms = rms;
    ASSIGN_OR_RETURN(norm.weight, Take(name + ".weight", {size}, torch::kFloat32));
    if (norm_offset_ != 0.0) norm.weight.add_(norm_offset_);  // in fp32, as Gemma's 1 + w
    if (bias) {
      ASSIGN_OR_RETURN(norm.bias, Take(name + ".bias", {size}, torch::kFloat32));
    }
    return norm;
  }

 private:
  std::string Parametrized(const std::string& name, const std::string& part) const {
    return absl::StrCat(prefix_, name, ".parametrizations.weight.", part);
  }

  const Checkpoint& checkpoint_;
  std::string prefix_;
  torch::ScalarType dtype_;
  double norm_offset_;
  size_t config_adapters_ = 0;
  int64_t adapter_rank_ = 0;
  double adapter_scale_ = 0.0;
};

// [all queries; all keys; all values] rows reordered by key/value head (the group's queries,
// its key, its value, then the next group's), so that one group's projection is one slice of
// the weights and its heads are one view of the product.
LinearWeights GroupMajor(LinearWeights qkv, int64_t kv_heads, int64_t group, int64_t head_dim) {
  const int64_t queries = kv_heads * group * head_dim, keys = kv_heads * head_dim;
  auto reorder = [&](const torch::Tensor& t) {
    const std::vector<int64_t> rest(t.sizes().begin() + 1, t.sizes().end());
    auto heads = [&](int64_t begin, int64_t end, int64_t count) {
      std::vector<int64_t> shape = {kv_heads, count, head_dim};
      shape.insert(shape.end(), rest.begin(), rest.end());
      return t.slice(0, begin, end).reshape(shape);
    };
    std::vector<int64_t> flat = {-1};
    flat.insert(flat.end(), rest.begin(), rest.end());
    return torch::cat({heads(0, queries, group), heads(queries, queries + keys, 1),
                       heads(queries + keys, queries + 2 * keys, 1)},
                      1)
        .reshape(flat)
        .contiguous();
  };
  qkv.weight = reorder(qkv.weight);
  qkv.bias = reorder(qkv.bias);
  if (qkv.adapters) {  // their outputs are the same rows
    auto adapters = std::make_shared<LowRankAdapters>(*qkv.adapters);
    for (torch::Tensor& up : adapters->up) up = reorder(up.t()).t().contiguous();
    qkv.adapters = std::move(adapters);
  }
  return qkv;
}

}  // namespace

absl::StatusOr<EncoderWeights> BindEncoderWeights(const EncoderConfig& config,
                                                  const ArchitectureSpec& spec,
                                                  const Checkpoint& checkpoint,
                                                  torch::ScalarType dtype) {
  const std::string probe = spec.word_embeddings + ".weight";
  const std::string* prefix = nullptr;
  const std::string parametrized = spec.word_embeddings + ".parametrizations.weight.original";
  for (const auto& candidate : spec.weight_prefixes) {
    if (checkpoint.Find(candidate + probe) != nullptr ||
        checkpoint.Find(candidate + parametrized) != nullptr) {
      prefix = &candidate;
      break;
    }
  }
  if (prefix == nullptr) {
    return absl::DataLossError(absl::StrCat("missing tensor '", probe, "' (tried prefixes '",
                                            absl::StrJoin(spec.weight_prefixes, "', '"), "')"));
  }
  Binder bind(checkpoint, *prefix, dtype, spec.norm_weight_offset);
  bind.SetAdapters(config.adapters.size(), config.adapter_rank, config.adapter_scale);
  const int64_t h = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  const int64_t head_dim = config.head_dim();
  const int64_t kv_heads = config.key_value_heads();
  const int64_t group = config.num_attention_heads / kv_heads;
  const int64_t queries = config.num_attention_heads * head_dim, keys = kv_heads * head_dim;
  const bool rms = config.rms_norm;
  EncoderWeights w;
  ASSIGN_OR_RETURN(w.word_embeddings,
                   bind.Take(spec.word_embeddings + ".weight", {config.vocab_size, h}));
  ASSIGN_OR_RETURN(w.word_adapters,
                   bind.Adapters(spec.word_embeddings, config.vocab_size, h, /*table=*/true));
  if (!spec.position_embeddings.empty()) {
    ASSIGN_OR_RETURN(w.position_embeddings, bind.Take(spec.position_embeddings + ".weight",
                                                      {config.max_position_embeddings, h}));
  }
  if (!spec.token_type_embeddings.empty() && config.type_vocab_size > 0) {
    ASSIGN_OR_RETURN(torch::Tensor types, bind.Take(spec.token_type_embeddings + ".weight",
                                                    {config.type_vocab_size, h}));
    w.token_type_embeddings = types.contiguous();
    ASSIGN_OR_RETURN(w.type_adapters, bind.Adapters(spec.token_type_embeddings,
                                                    config.type_vocab_size, h, /*table=*/true));
  }
  if (!spec.embeddings_norm.empty()) {
    ASSIGN_OR_RETURN(w.embeddings_norm, bind.Norm(spec.embeddings_norm, h, config.norm_bias, rms));
  }
  if (!spec.relative_attention_bias.empty()) {
    ASSIGN_OR_RETURN(torch::Tensor table,
                     bind.Take(spec.relative_attention_bias + ".weight",
                               {config.relative_attention_buckets, config.num_attention_heads},
                               torch::kFloat32));
    w.relative_bias = table.t().contiguous();  // a head's row per call
  }
  // Parts' adapters would each read the input apart: none of the families with adapters
  // stores a stacked layer in parts, and one that did is refused rather than served without.
  auto stack = [](const std::vector<LinearWeights>& parts) -> absl::StatusOr<LinearWeights> {
    LinearWeights out;
    std::vector<torch::Tensor> weights, biases;
    for (const auto& part : parts) {
      if (part.adapters) {
        return absl::DataLossError("task adapters on a layer stored in parts are not supported");
      }
      weights.push_back(part.weight);
      biases.push_back(part.bias);
    }
    out.weight = torch::cat(weights, 0).contiguous();
    out.bias = torch::cat(biases, 0).contiguous();
    return out;
  };
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat(spec.layer_prefix, i, ".");
    LayerWeights layer;
    const bool bias = config.attention_bias;
    if (!spec.fused_qkv.empty()) {
      ASSIGN_OR_RETURN(layer.qkv, bind.Linear(p + spec.fused_qkv, queries + 2 * keys, h, bias));
    } else {
      ASSIGN_OR_RETURN(LinearWeights query, bind.Linear(p + spec.query, queries, h, bias));
      ASSIGN_OR_RETURN(LinearWeights key, bind.Linear(p + spec.key, keys, h, bias));
      ASSIGN_OR_RETURN(LinearWeights value, bind.Linear(p + spec.value, keys, h, bias));
      ASSIGN_OR_RETURN(layer.qkv, stack({query, key, value}));
    }
    layer.qkv = GroupMajor(std::move(layer.qkv), kv_heads, group, head_dim);
    if (!spec.query_norm.empty()) {
      ASSIGN_OR_RETURN(layer.query_norm, bind.Norm(p + spec.query_norm, head_dim, false, rms));
      ASSIGN_OR_RETURN(layer.key_norm, bind.Norm(p + spec.key_norm, head_dim, false, rms));
    }
    ASSIGN_OR_RETURN(layer.attention_output, bind.Linear(p + spec.attention_output, h, queries,
                                                         config.attention_output_bias));
    if (i > 0 || spec.first_layer_attention_norm) {
      ASSIGN_OR_RETURN(layer.attention_norm,
                       bind.Norm(p + spec.attention_norm, h, config.norm_bias, rms));
    }
    if (config.IsMoeLayer(i)) {
      const int64_t experts = config.num_experts;
      ASSIGN_OR_RETURN(layer.moe_router.weight,
                       bind.Take(p + spec.moe.router + ".weight", {experts, h}, torch::kFloat32));
      layer.moe_router.bias = torch::zeros({experts}, torch::kFloat32);
      ASSIGN_OR_RETURN(const torch::Tensor w1, bind.Take(p + spec.moe.w1, {experts * inner, h}));
      ASSIGN_OR_RETURN(const torch::Tensor w2, bind.Take(p + spec.moe.w2, {experts * inner, h}));
      for (int64_t e = 0; e < experts; ++e) {
        LinearWeights in, out;
        in.weight = w1.slice(0, e * inner, (e + 1) * inner).contiguous();
        in.bias = torch::zeros({inner}, in.weight.options());
        out.weight = w2.slice(0, e * inner, (e + 1) * inner).t().contiguous();
        out.bias = torch::zeros({h}, out.weight.options());
        layer.moe_in.push_back(std::move(in));
        layer.moe_out.push_back(std::move(out));
      }
      ASSIGN_OR_RETURN(layer.moe_bias, bind.Take(p + spec.moe.bias, {h}));
    } else if (config.mlp == MlpKind::kPlain || !spec.mlp_gate.empty()) {
      ASSIGN_OR_RETURN(layer.mlp_in, bind.Linear(p + spec.mlp_in, inner, h, config.mlp_in_bias));
    } else {  // both halves in one projection
      ASSIGN_OR_RETURN(layer.mlp_in,
                       bind.Linear(p + spec.mlp_in, 2 * inner, h, config.mlp_in_bias));
    }
    if (config.mlp != MlpKind::kPlain && !spec.mlp_gate.empty() && !config.IsMoeLayer(i)) {
      ASSIGN_OR_RETURN(LinearWeights gate,
                       bind.Linear(p + spec.mlp_gate, inner, h, config.mlp_in_bias));
      ASSIGN_OR_RETURN(layer.mlp_in, stack({layer.mlp_in, gate}));
    }
    if (!config.IsMoeLayer(i)) {
      ASSIGN_OR_RETURN(layer.mlp_out, bind.Linear(p + spec.mlp_out, h, inner, config.mlp_out_bias));
    }
    ASSIGN_OR_RETURN(layer.output_norm, bind.Norm(p + spec.output_norm, h, config.norm_bias, rms));
    if (!spec.attention_post_norm.empty()) {
      ASSIGN_OR_RETURN(layer.attention_post_norm,
                       bind.Norm(p + spec.attention_post_norm, h, config.norm_bias, rms));
    }
    if (!spec.output_post_norm.empty()) {
      ASSIGN_OR_RETURN(layer.output_post_norm,
                       bind.Norm(p + spec.output_post_norm, h, config.norm_bias, rms));
    }
    w.layers.push_back(std::move(layer));
  }
  if (!spec.final_norm.empty()) {
    ASSIGN_OR_RETURN(w.final_norm, bind.Norm(spec.final_norm, h, config.norm_bias, rms));
  }
  return w;
}

void MoveEncoderWeights(const torch::Device& device, EncoderWeights* w) {
  const auto move = [&](torch::Tensor& t) {
    if (t.defined()) t = t.to(device);
  };
  const auto move_adapters = [&](std::shared_ptr<const LowRankAdapters>& adapters) {
    if (!adapters) return;
    auto moved = std::make_shared<LowRankAdapters>(*adapters);
    for (torch::Tensor& t : moved->down) move(t);
    for (torch::Tensor& t : moved->up) move(t);
    adapters = std::move(moved);
  };
  const auto move_linear = [&](LinearWeights& linear) {
    move(linear.weight);
    move(linear.bias);
    move_adapters(linear.adapters);
  };
  const auto move_norm = [&](NormWeights& norm) {
    move(norm.weight);
    move(norm.bias);
  };
  move(w->word_embeddings);
  move(w->position_embeddings);
  move(w->token_type_embeddings);
  move_adapters(w->word_adapters);
  move_adapters(w->type_adapters);
  move(w->relative_bias);
  move_norm(w->embeddings_norm);
  move_norm(w->final_norm);
  for (LayerWeights& layer : w->layers) {
    for (LinearWeights* linear :
         {&layer.qkv, &layer.attention_output, &layer.mlp_in, &layer.mlp_out, &layer.moe_router}) {
      move_linear(*linear);
    }
    for (LinearWeights& expert : layer.moe_in) move_linear(expert);
    for (LinearWeights& expert : layer.moe_out) move_linear(expert);
    move(layer.moe_bias);
    for (NormWeights* norm :
         {&layer.query_norm, &layer.key_norm, &layer.attention_norm, &layer.output_norm,
          &layer.attention_post_norm, &layer.output_post_norm}) {
      move_norm(*norm);
    }
  }
}

}  // namespace embedding::model_store
