#include "model_store/demo/demo_model_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/demo/demo_tokenizer_json.h"
#include "model_store/demo/demo_vocabulary.h"
#include "model_store/formats/safetensors_writer.h"
#include "model_store/formats/sentence_transformers_writer.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/encoder_config.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::Status ValidateSpec(const DemoModelSpec& spec) {
  auto positive = [](const char* field, int value) -> absl::Status {
    if (value > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, " must be > 0"));
  };
  RETURN_IF_ERROR(positive("num_layers", spec.num_layers));
  RETURN_IF_ERROR(positive("hidden_size", spec.hidden_size));
  RETURN_IF_ERROR(positive("num_heads", spec.num_heads));
  if (spec.num_kv_heads < 0 || (spec.num_kv_heads > 0 && spec.num_heads % spec.num_kv_heads != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("num_kv_heads: ", spec.num_kv_heads,
                                                   " must divide num_heads ", spec.num_heads));
  }
  if (spec.head_dim < 0 || spec.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("head_dim: ", spec.head_dim, " must be 0 or even and positive"));
  }
  if (spec.head_dim == 0 && spec.hidden_size % spec.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hidden_size: ", spec.hidden_size, " must be divisible by num_heads ", spec.num_heads));
  }
  if (spec.max_positions < 3)
    return absl::InvalidArgumentError("max_positions: must be >= 3 ([CLS] text [SEP])");
  if (spec.num_labels < 0)
    return absl::InvalidArgumentError("num_labels: must be >= 0 (0: an embedder)");
  if (spec.splade && spec.num_labels > 0)
    return absl::InvalidArgumentError("splade: a SPLADE model has no classification head");
  if (spec.num_experts < 2 || spec.moe_every < 0)
    return absl::InvalidArgumentError("experts: must be >= 2; moe_every: must be >= 0");
  if (spec.causal_lm_reranker && (spec.num_labels > 0 || spec.splade))
    return absl::InvalidArgumentError("causal_lm_reranker: a causal LM has no other head");
  if (spec.pooling != "cls" && spec.pooling != "mean" && spec.pooling != "max" &&
      spec.pooling != "last_token")
    return absl::InvalidArgumentError("pooling: must be one of cls, mean, max, last_token");
  return absl::OkStatus();
}

// Seeded weights scaled by 1/sqrt(fan_in), so attention logits are O(1) and a temperature
// visibly sharpens them; norms get weights near 1 so a reference must really apply them.
class WeightFactory {
 public:
  explicit WeightFactory(uint64_t seed) : rng_(seed) {}

  F32Tensor Normal(std::vector<int64_t> shape, double stddev, double mean = 0.0) {
    F32Tensor t;
    t.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::normal_distribution<float> dist(0.0f, 1.0f);
    t.values.resize(n);
    for (auto& v : t.values) v = static_cast<float>(mean + stddev * dist(rng_));
    return t;
  }

  void Linear(std::map<std::string, F32Tensor>* out, const std::string& name, int64_t rows,
              int64_t cols) {
    (*out)[name + ".weight"] = Normal({rows, cols}, 1.0 / std::sqrt(static_cast<double>(cols)));
    (*out)[name + ".bias"] = Normal({rows}, 0.02);
  }

  // Weights near `mean` (1, or 0 where the model multiplies by 1 + w).
  void Norm(std::map<std::string, F32Tensor>* out, const std::string& name, int64_t size,
            double mean = 1.0) {
    (*out)[name + ".weight"] = Normal({size}, 0.1, mean);
    (*out)[name + ".bias"] = Normal({size}, 0.05);
  }

 private:
  std::mt19937_64 rng_;
};

// Every weight the architecture names, shaped and biased as `config` says (saved without the
// base prefix).
std::map<std::string, F32Tensor> MakeWeights(uint64_t seed, const ArchitectureSpec& arch,
                                             const EncoderConfig& config) {
  WeightFactory f(seed);
  const int64_t h = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  std::map<std::string, F32Tensor> w;
  auto linear = [&](const std::string& name, int64_t rows, int64_t cols, bool bias) {
    f.Linear(&w, name, rows, cols);
    if (!bias) w.erase(name + ".bias");
  };
  w[arch.word_embeddings + ".weight"] = f.Normal({config.vocab_size, h}, 0.5);
  if (!arch.position_embeddings.empty())
    w[arch.position_embeddings + ".weight"] = f.Normal({config.max_position_embeddings, h}, 0.5);
  if (!arch.token_type_embeddings.empty() && config.type_vocab_size > 0)
    w[arch.token_type_embeddings + ".weight"] = f.Normal({config.type_vocab_size, h}, 0.5);
  auto norm = [&](const std::string& name, int64_t size) {
    f.Norm(&w, name, size, 1.0 - arch.norm_weight_offset);
    if (!config.norm_bias) w.erase(name + ".bias");
  };
  if (!arch.embeddings_norm.empty()) norm(arch.embeddings_norm, h);
  if (!arch.relative_attention_bias.empty()) {
    w[arch.relative_attention_bias + ".weight"] =
        f.Normal({config.relative_attention_buckets, config.num_attention_heads}, 1.0);
  }
  const int64_t queries = config.num_attention_heads * config.head_dim();
  const int64_t keys = config.key_value_heads() * config.head_dim();
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string layer = absl::StrCat(arch.layer_prefix, i, ".");
    if (!arch.fused_qkv.empty()) {
      linear(layer + arch.fused_qkv, queries + 2 * keys, h, config.attention_bias);
    } else {
      linear(layer + arch.query, queries, h, config.attention_bias);
      linear(layer + arch.key, keys, h, config.attention_bias);
      linear(layer + arch.value, keys, h, config.attention_bias);
    }
    if (!arch.query_norm.empty()) {
      norm(layer + arch.query_norm, config.head_dim());
      norm(layer + arch.key_norm, config.head_dim());
    }
    linear(layer + arch.attention_output, h, queries, config.attention_output_bias);
    if (i > 0 || arch.first_layer_attention_norm) norm(layer + arch.attention_norm, h);
    if (config.IsMoeLayer(i)) {  // the router, the stacked experts and their bias
      w[layer + arch.moe.router + ".weight"] =
          f.Normal({config.num_experts, h}, 1.0 / std::sqrt(static_cast<double>(h)));
      w[layer + arch.moe.w1] =
          f.Normal({config.num_experts * inner, h}, 1.0 / std::sqrt(static_cast<double>(h)));
      w[layer + arch.moe.w2] =
          f.Normal({config.num_experts * inner, h}, 1.0 / std::sqrt(static_cast<double>(inner)));
      w[layer + arch.moe.bias] = f.Normal({h}, 0.02);
      norm(layer + arch.output_norm, h);
      continue;
    }
    const bool gated = config.mlp != MlpKind::kPlain;
    const bool halves_apart = !arch.mlp_gate.empty();
    linear(layer + arch.mlp_in, gated && !halves_apart ? 2 * inner : inner, h, config.mlp_in_bias);
    if (gated && halves_apart) linear(layer + arch.mlp_gate, inner, h, config.mlp_in_bias);
    linear(layer + arch.mlp_out, h, inner, config.mlp_out_bias);
    norm(layer + arch.output_norm, h);
    if (!arch.attention_post_norm.empty()) norm(layer + arch.attention_post_norm, h);
    if (!arch.output_post_norm.empty()) norm(layer + arch.output_post_norm, h);
  }
  if (!arch.final_norm.empty()) norm(arch.final_norm, h);
  return w;
}

// jina's LoRAParametrization as torch saves it: each linear layer's and embedding table's
// weight under `.parametrizations.weight.original`, beside every task's low-rank factors
// (`.0.lora_A`, `.0.lora_B`; a linear layer's [tasks, rank, in] and [tasks, out, rank], a
// table's [tasks, rows, rank] and [tasks, rank, hidden]), under the base model's prefix. The
// factors are random, not zero as training starts them, so every task changes the vectors.
std::map<std::string, F32Tensor> WithTaskAdapters(uint64_t seed, const ArchitectureSpec& arch,
                                                  const EncoderConfig& config,
                                                  std::map<std::string, F32Tensor> encoder) {
  const std::string& prefix = arch.weight_prefixes.front();
  const auto tasks = static_cast<int64_t>(config.adapters.size());
  const int64_t rank = config.adapter_rank;
  WeightFactory f(seed + 3);
  std::map<std::string, F32Tensor> w;
  const std::vector<std::string> tables = {arch.word_embeddings, arch.token_type_embeddings};
  for (auto& [name, tensor] : encoder) {
    const bool weight = absl::EndsWith(name, ".weight") && tensor.shape.size() == 2;
    if (!weight) {
      w[prefix + name] = std::move(tensor);
      continue;
    }
    const std::string base = prefix + name.substr(0, name.size() - 7) + ".parametrizations.weight.";
    const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
    if (std::find(tables.begin(), tables.end(), name.substr(0, name.size() - 7)) != tables.end()) {
      w[base + "0.lora_A"] = f.Normal({tasks, rows, rank}, 1.0);
      w[base + "0.lora_B"] = f.Normal({tasks, rank, cols}, 0.3);
    } else {
      w[base + "0.lora_A"] = f.Normal({tasks, rank, cols}, 1.0 / std::sqrt(double(cols)));
      w[base + "0.lora_B"] = f.Normal({tasks, rows, rank}, 0.6);
    }
    w[base + "original"] = std::move(tensor);
  }
  return w;
}

// A *ForSequenceClassification checkpoint's tensors: the encoder's under the family's prefix,
// the head's beside them (a step under_prefix inside it), as transformers saves them.
std::map<std::string, F32Tensor> WithClassifierHead(uint64_t seed, const ArchitectureSpec& arch,
                                                    const EncoderConfig& config,
                                                    std::map<std::string, F32Tensor> encoder) {
  const std::string& prefix = arch.weight_prefixes.front();
  std::map<std::string, F32Tensor> w;
  for (auto& [name, tensor] : encoder) w[prefix + name] = std::move(tensor);
  WeightFactory f(seed + 1);
  const int64_t h = config.hidden_size;
  const ClassifierConfig& classifier = config.classifier;
  for (size_t i = 0; i < arch.classifier.steps.size(); ++i) {
    const ClassifierStep& step = arch.classifier.steps[i];
    const bool last = i + 1 == arch.classifier.steps.size();
    const std::string name = (step.under_prefix ? prefix : "") + step.linear;
    f.Linear(&w, name, last ? static_cast<int64_t>(classifier.labels.size()) : h, h);
    if (!step.bias || std::find(classifier.biases_absent.begin(), classifier.biases_absent.end(),
                                step.bias_field) != classifier.biases_absent.end()) {
      w.erase(name + ".bias");
    }
    if (!step.norm.empty()) {
      f.Norm(&w, step.norm, h);
      if (!config.norm_bias) w.erase(step.norm + ".bias");
    }
  }
  return w;
}

// A *ForMaskedLM checkpoint for SPLADE: the encoder under the family's prefix, the MLM head's
// transform and norm and its decoder bias beside it; the decoder itself tied to the word
// embeddings, so saved only as them (as transformers saves a tied head).
std::map<std::string, F32Tensor> WithMlmHead(uint64_t seed, const ArchitectureSpec& arch,
                                             const EncoderConfig& config,
                                             std::map<std::string, F32Tensor> encoder) {
  const std::string& prefix = arch.weight_prefixes.front();
  std::map<std::string, F32Tensor> w;
  for (auto& [name, tensor] : encoder) w[prefix + name] = std::move(tensor);
  WeightFactory f(seed + 2);
  f.Linear(&w, arch.mlm_head.transform, config.hidden_size, config.hidden_size);
  f.Norm(&w, arch.mlm_head.transform_norm, config.hidden_size);
  // Centred 2.5 standard deviations of a logit below zero (the word embeddings' 0.5 over
  // `hidden` unit-scale features), so relu keeps a few percent of the vocabulary, as a trained
  // SPLADE's sparse output.
  const double logit_std = 0.5 * std::sqrt(static_cast<double>(config.hidden_size));
  w[arch.mlm_head.decoder_bias] = f.Normal({config.vocab_size}, 1.0, -2.5 * logit_std);
  return w;
}

// SparseEncoder's modules: MLMTransformer, then SpladePooling (max over log(1 + relu)).
absl::Status WriteSpladeModules(const fs::path& root, int64_t vocab_size) {
  std::error_code ec;
  for (const char* embedder_module : {"1_Pooling", "2_Normalize"})  // a SparseEncoder has neither
    fs::remove_all(root / embedder_module, ec);
  fs::create_directories(root / "1_SpladePooling", ec);
  if (ec) return absl::InternalError(absl::StrCat(root.string(), ": ", ec.message()));
  const Json modules = {
      {{"idx", 0}, {"name", "0"}, {"path", ""},
       {"type", "sentence_transformers.sparse_encoder.models.MLMTransformer"}},
      {{"idx", 1}, {"name", "1"}, {"path", "1_SpladePooling"},
       {"type", "sentence_transformers.sparse_encoder.models.SpladePooling"}}};
  RETURN_IF_ERROR(WriteTextFile(root / "modules.json", modules.dump(2)));
  const Json pooling = {{"pooling_strategy", "max"},
                        {"activation_function", "relu"},
                        {"word_embedding_dimension", vocab_size}};
  return WriteTextFile(root / "1_SpladePooling" / "config.json", pooling.dump(2));
}

// Dense modules after mean pooling, without bias or activation, each `outs` wide in turn, then
// Normalize: EmbeddingGemma's 2_Dense (hidden -> 4 x hidden) and 3_Dense (back), gtr-t5's one
// 2_Dense (hidden -> hidden).
absl::Status WriteDenseModules(const fs::path& root, const DemoModelSpec& spec,
                               const std::vector<int64_t>& outs) {
  std::error_code ec;
  fs::remove_all(root / "2_Normalize", ec);
  WeightFactory f(spec.seed + 2);
  Json modules = {{{"idx", 0},
                   {"name", "0"},
                   {"path", ""},
                   {"type", "sentence_transformers.models.Transformer"}},
                  {{"idx", 1},
                   {"name", "1"},
                   {"path", "1_Pooling"},
                   {"type", "sentence_transformers.models.Pooling"}}};
  int idx = 2;
  int64_t in = spec.hidden_size;
  for (const int64_t out : outs) {
    const std::string folder = absl::StrCat(idx, "_Dense");
    fs::create_directories(root / folder, ec);
    if (ec) return absl::InternalError(absl::StrCat(root.string(), ": ", ec.message()));
    const Json dense = {{"in_features", in},
                        {"out_features", out},
                        {"bias", false},
                        {"activation_function", "torch.nn.modules.linear.Identity"}};
    RETURN_IF_ERROR(WriteTextFile(root / folder / "config.json", dense.dump(2)));
    std::map<std::string, F32Tensor> weights;
    weights["linear.weight"] = f.Normal({out, in}, 1.0 / std::sqrt(static_cast<double>(in)));
    RETURN_IF_ERROR(WriteSafetensors((root / folder / "model.safetensors").string(), weights));
    modules.push_back({{"idx", idx},
                       {"name", std::to_string(idx)},
                       {"path", folder},
                       {"type", "sentence_transformers.models.Dense"}});
    ++idx;
    in = out;
  }
  const std::string normalize = absl::StrCat(idx, "_Normalize");
  fs::create_directories(root / normalize, ec);
  modules.push_back({{"idx", idx},
                     {"name", std::to_string(idx)},
                     {"path", normalize},
                     {"type", "sentence_transformers.models.Normalize"}});
  return WriteTextFile(root / "modules.json", modules.dump(2));
}

// config.json in the family's own field names and conventions.
Json ConfigJson(const DemoModelSpec& spec, const ArchitectureSpec& arch, int64_t vocab_size,
                int64_t intermediate) {
  const ConfigFieldNames& f = arch.fields;
  Json config = {{"model_type", arch.model_type},
                 {"vocab_size", vocab_size},
                 {f.hidden_size, spec.hidden_size},
                 {f.num_layers, spec.num_layers},
                 {f.num_heads, spec.num_heads},
                 {f.intermediate_size, intermediate},
                 {f.max_positions, spec.max_positions},
                 {"type_vocab_size", 2},
                 {f.activation, "gelu"},
                 {f.layer_norm_eps, 1e-12},
                 {"pad_token_id", 0},
                 {"demo_model", true},
                 {"demo_seed", spec.seed}};
  // Each family's own keys, as its published checkpoints set them.
  if (arch.family == "bert") {
    config["architectures"] = {"BertModel"};
  } else if (arch.family == "jina_bert") {  // jina-embeddings-v2's: ALiBi, GEGLU
    config["architectures"] = {"JinaBertModel"};
    config["position_embedding_type"] = "alibi";
    config["feed_forward_type"] = "geglu";
  } else if (arch.positions == PositionKind::kAbsoluteAfterPadding) {  // <pad> 1, positions from 2
    const std::map<std::string, std::string> classes = {{"xlm-roberta", "XLMRobertaModel"},
                                                        {"roberta", "RobertaModel"},
                                                        {"camembert", "CamembertModel"},
                                                        {"mpnet", "MPNetModel"}};
    config["architectures"] = {classes.at(arch.family)};
    config["pad_token_id"] = 1;
    config["bos_token_id"] = 0;
    config["eos_token_id"] = 2;
    config[f.max_positions] = spec.max_positions + 2;
    config["type_vocab_size"] = 1;
    config[f.layer_norm_eps] = 1e-5;
    if (arch.family == "mpnet") {  // all-mpnet-base-v2's: no token types, 32 buckets
      config.erase("type_vocab_size");
      config["relative_attention_num_buckets"] = 32;
    }
  } else if (arch.family == "distilbert") {  // msmarco-distilbert-base-v4's keys
    config["architectures"] = {"DistilBertModel"};
    config.erase("type_vocab_size");
    config.erase(f.layer_norm_eps);  // fixed at 1e-12 in DistilBERT
    config["sinusoidal_pos_embds"] = false;
    config["tie_weights_"] = true;
  } else if (arch.family == "xlm-roberta-flash") {  // jina-embeddings-v3's
    config["architectures"] = {"XLMRobertaLoRA"};
    config["auto_map"] = {
        {"AutoConfig",
         "jinaai/"
         "xlm-roberta-flash-implementation--configuration_xlm_roberta.XLMRobertaFlashConfig"},
        {"AutoModel", "jinaai/xlm-roberta-flash-implementation--modeling_lora.XLMRobertaLoRA"}};
    config["position_embedding_type"] = "rotary";
    config["rotary_emb_base"] = 20000.0;
    config["pad_token_id"] = 1;
    config["bos_token_id"] = 0;
    config["eos_token_id"] = 2;
    config["type_vocab_size"] = 1;
    config[f.layer_norm_eps] = 1e-5;
    config["lora_adaptations"] = {"retrieval.query", "retrieval.passage", "separation",
                                  "classification", "text-matching"};
    config["task_instructions"] = {
        {"retrieval.query", "Represent the query for retrieving evidence documents: "},
        {"retrieval.passage", "Represent the document for retrieval: "},
        {"separation", ""},
        {"classification", ""},
        {"text-matching", ""}};
    config["lora_rank"] = 4;
    config["lora_alpha"] = 1;
    config["lora_dropout_p"] = 0.0;
    config["lora_main_params_trainable"] = false;
    config["load_trained_adapters"] = true;
    config["use_flash_attn"] = true;
    config["emb_pooler"] = nullptr;
    // jina-v3's widths (32 ... 1,024), those the demo's width allows, and the width itself.
    Json widths = Json::array();
    for (const int width : {32, 64, 128, 256, 512, 768})
      if (width < spec.hidden_size) widths.push_back(width);
    widths.push_back(spec.hidden_size);
    config["matryoshka_dimensions"] = widths;
    config["truncate_dim"] = nullptr;
  } else if (arch.family == "nomic_bert") {  // nomic-embed-text-v1.5's, NTK past 2,048
    config["architectures"] = {"NomicBertModel"};
    config[f.activation] = "swiglu";
    config["rotary_emb_base"] = 1000;
    config["rotary_emb_fraction"] = 1.0;
    config["rotary_emb_interleaved"] = false;
    config["rotary_scaling_factor"] = 2.0;
    config["max_trained_positions"] = std::min(2048, spec.max_positions);
    config["qkv_proj_bias"] = false;
    config["mlp_fc1_bias"] = false;
    config["mlp_fc2_bias"] = false;
    config["prenorm"] = false;
  } else if (arch.family == "nomic_bert_moe") {  // nomic-embed-text-v2-moe's
    config["architectures"] = {"NomicBertModel"};
    config[f.activation] = "gelu";
    config["rotary_emb_base"] = 10000;
    config["rotary_emb_fraction"] = 1.0;
    config["rotary_emb_interleaved"] = false;
    config["rotary_scaling_factor"] = nullptr;
    config["qkv_proj_bias"] = true;
    config["mlp_fc1_bias"] = true;
    config["mlp_fc2_bias"] = true;
    config["prenorm"] = false;
    config["type_vocab_size"] = 1;
    config[f.layer_norm_eps] = 1e-5;
    config["moe_every_n_layers"] = spec.moe_every;
    config["num_experts"] = spec.num_experts;
    config["moe_top_k"] = 2;
    config["moe_normalize_expert_weights"] = false;
    config["moe_impl"] = "megablocks";
    config["pad_token_id"] = 1;
  } else if (arch.family == "modernbert") {  // ModernBERT-base's, in the legacy spelling
    config["architectures"] = {"ModernBertForMaskedLM"};
    config["norm_bias"] = false;
    config["attention_bias"] = false;
    config[f.layer_norm_eps] = 1e-5;
    config["mlp_bias"] = false;
    config["global_attn_every_n_layers"] = 3;
    config["local_attention"] = 128;
    config["global_rope_theta"] = 160000;
    config["local_rope_theta"] = 10000;
  } else if (arch.model_type == "t5") {  // gtr-t5-base's keys (T5EncoderModel)
    config.erase(f.layer_norm_eps);
    config.erase("type_vocab_size");
    config["architectures"] = {"T5EncoderModel"};
    config[f.activation] = arch.family == "t5_gated" ? "gated-gelu" : "relu";
    config["d_kv"] = spec.head_dim > 0 ? spec.head_dim : spec.hidden_size / spec.num_heads;
    config["relative_attention_num_buckets"] = 32;
    config["relative_attention_max_distance"] = 128;
    config["layer_norm_epsilon"] = 1e-6;
    config["is_encoder_decoder"] = true;
    config["pad_token_id"] = 0;
    config["eos_token_id"] = 1;
    config["decoder_start_token_id"] = 0;
  } else if (arch.family == "gemma3") {  // google/embeddinggemma-300m's keys
    config.erase(f.layer_norm_eps);
    config.erase("type_vocab_size");
    config["architectures"] = {"Gemma3TextModel"};
    config["hidden_activation"] = "gelu_pytorch_tanh";
    config.erase(f.activation);
    config["rms_norm_eps"] = 1e-6;
    config["num_key_value_heads"] = spec.num_kv_heads > 0 ? spec.num_kv_heads : spec.num_heads;
    const int head_dim = spec.head_dim > 0 ? spec.head_dim : spec.hidden_size / spec.num_heads;
    config["head_dim"] = head_dim;
    config["query_pre_attn_scalar"] = head_dim;
    config["rope_theta"] = 1000000.0;
    config["rope_local_base_freq"] = 10000.0;
    config["rope_scaling"] = nullptr;
    // A window well inside the demo's, so the bands matter; every third layer global.
    config["sliding_window"] = std::max(2, spec.max_positions / 8);
    Json types = Json::array();
    for (int i = 0; i < spec.num_layers; ++i)
      types.push_back((i + 1) % 3 == 0 ? "full_attention" : "sliding_attention");
    config["layer_types"] = types;
    config["use_bidirectional_attention"] = true;
    config["attention_bias"] = false;
    config["attention_dropout"] = 0.0;
    config["attn_logit_softcapping"] = nullptr;
    config["final_logit_softcapping"] = nullptr;
    config["pad_token_id"] = 0;
    config["eos_token_id"] = 1;
    config["bos_token_id"] = 2;
  } else if (arch.decoder) {  // Qwen3-Embedding-0.6B's keys (the others' are a subset)
    config.erase(f.layer_norm_eps);
    config.erase("type_vocab_size");
    config.erase("pad_token_id");
    const std::map<std::string, std::string> classes = {{"qwen3", "Qwen3ForCausalLM"},
                                                        {"qwen2", "Qwen2ForCausalLM"},
                                                        {"mistral", "MistralForCausalLM"},
                                                        {"llama", "LlamaForCausalLM"}};
    config["architectures"] = {classes.at(arch.family)};
    config[f.activation] = "silu";
    config["rms_norm_eps"] = 1e-6;
    config["num_key_value_heads"] = spec.num_kv_heads > 0 ? spec.num_kv_heads : spec.num_heads;
    if (spec.head_dim > 0) config["head_dim"] = spec.head_dim;
    config["rope_theta"] = 1000000;
    config["rope_scaling"] = nullptr;
    config["sliding_window"] = nullptr;
    config["use_sliding_window"] = false;
    config["tie_word_embeddings"] = true;
    config["attention_bias"] = false;
    config["bos_token_id"] = vocab_size - 1;
    config["eos_token_id"] = vocab_size - 1;
  } else if (arch.family == "new") {  // gte-large-en-v1.5's: fixed NTK, no token types
    config["architectures"] = {"NewModel"};
    config["position_embedding_type"] = "rope";
    config["rope_theta"] = 160000;
    config["rope_scaling"] = {{"type", "ntk"}, {"factor", 2.0}};
    config["layer_norm_type"] = "layer_norm";
    config["pack_qkv"] = true;
    config["type_vocab_size"] = 0;
    config["logn_attention_scale"] = false;
    config["logn_attention_clip1"] = false;
  }
  if (spec.splade) {  // naver/splade-cocondenser-ensembledistil's
    config["architectures"] = {arch.family == "distilbert" ? "DistilBertForMaskedLM"
                                                           : "BertForMaskedLM"};
    config["tie_word_embeddings"] = true;
  }
  if (spec.num_labels > 0) {  // cross-encoder/ms-marco-MiniLM-L-6-v2's and bge-reranker's keys
    config["architectures"] = {arch.classifier.architecture};
    Json id2label = Json::object(), label2id = Json::object();
    for (int i = 0; i < spec.num_labels; ++i) {
      id2label[std::to_string(i)] = absl::StrCat("LABEL_", i);
      label2id[absl::StrCat("LABEL_", i)] = i;
    }
    config["id2label"] = id2label;
    config["label2id"] = label2id;
    if (arch.family == "modernbert") {  // gte-reranker-modernbert-base's head
      config["classifier_pooling"] = "mean";
      config["classifier_activation"] = "gelu";
      config["classifier_bias"] = false;
    }
  }
  return config;
}

// The whole words of the WordPiece vocabulary (not its specials, characters or "##" pieces):
// the byte-level BPE vocabularies are built from them.
absl::StatusOr<std::vector<std::string>> DemoWords(const DemoModelSpec& spec) {
  ASSIGN_OR_RETURN(auto pieces, BuildDemoVocabulary(spec.word_list, spec.vocab_size));
  std::vector<std::string> words;
  for (const std::string& piece : pieces) {
    if (piece.size() > 1 && piece[0] != '[' && piece.rfind("##", 0) != 0) words.push_back(piece);
  }
  return words;
}

// Returns the vocabulary size.
absl::StatusOr<int64_t> WriteTokenizerFiles(const fs::path& root, const DemoModelSpec& spec,
                                            const ArchitectureSpec& arch) {
  Json tokenizer, settings;
  int64_t vocab_size = 0;
  const Json roberta_specials = {
      {"bos_token", "<s>"},  {"eos_token", "</s>"},  {"unk_token", "<unk>"},  {"cls_token", "<s>"},
      {"sep_token", "</s>"}, {"pad_token", "<pad>"}, {"mask_token", "<mask>"}};
  // As each family's Hub checkpoints tokenize: the decoders and RoBERTa with byte-level BPE,
  // XLM-R and CamemBERT with SentencePiece Unigram, BERT's kin with WordPiece.
  if (arch.family == "gemma3") {
    ASSIGN_OR_RETURN(auto words, DemoWords(spec));
    tokenizer = GemmaBpeTokenizerJson(words, spec.vocab_size);
    vocab_size = spec.vocab_size;
    settings = {{"bos_token", "<bos>"},   {"eos_token", "<eos>"},  {"pad_token", "<pad>"},
                {"unk_token", "<unk>"},   {"add_bos_token", true}, {"add_eos_token", true},
                {"padding_side", "right"}};
  } else if (arch.decoder) {
    ASSIGN_OR_RETURN(auto words, DemoWords(spec));
    tokenizer = spec.causal_lm_reranker ? ChatBpeTokenizerJson(words, spec.vocab_size)
                                        : ByteLevelBpeTokenizerJson(words, spec.vocab_size - 1);
    vocab_size = spec.vocab_size;
    settings = {{"eos_token", "<|endoftext|>"},
                {"pad_token", "<|endoftext|>"},
                {"padding_side", "left"},
                {"add_eos_token", true}};
  } else if (arch.family == "mpnet") {  // MPNet's WordPiece: <s> <pad> </s> [UNK] <mask> first
    ASSIGN_OR_RETURN(auto vocab, BuildDemoVocabulary(spec.word_list, spec.vocab_size));
    for (auto [i, token] : {std::pair{0, "<s>"}, std::pair{1, "<pad>"}, std::pair{2, "</s>"},
                            std::pair{3, "[UNK]"}, std::pair{4, "<mask>"}}) {
      vocab[i] = token;
    }
    tokenizer = WordPieceTokenizerJson(vocab, "<s>", "</s>");
    vocab_size = static_cast<int64_t>(vocab.size());
    settings = roberta_specials;
    settings["unk_token"] = "[UNK]";
    settings["do_lower_case"] = true;
  } else if (arch.family == "roberta") {
    ASSIGN_OR_RETURN(auto words, DemoWords(spec));
    tokenizer = RobertaBpeTokenizerJson(words, spec.vocab_size);
    vocab_size = spec.vocab_size;
    settings = roberta_specials;
  } else if (arch.family == "nomic_bert_moe" || arch.family == "xlm-roberta-flash") {
    // XLM-R's SentencePiece, as v2-moe and jina-embeddings-v3 ship it
    ASSIGN_OR_RETURN(auto pieces, BuildDemoUnigramVocabulary(spec.word_list, spec.vocab_size));
    tokenizer = UnigramTokenizerJson(pieces);
    vocab_size = static_cast<int64_t>(pieces.size());
    settings = roberta_specials;
  } else if (arch.model_type == "t5") {
    ASSIGN_OR_RETURN(auto pieces, BuildDemoUnigramVocabulary(spec.word_list, spec.vocab_size + 2));
    tokenizer = T5UnigramTokenizerJson(pieces);
    vocab_size = static_cast<int64_t>(tokenizer["model"]["vocab"].size());
    settings = {{"eos_token", "</s>"}, {"pad_token", "<pad>"}, {"unk_token", "<unk>"}};
  } else if (arch.positions == PositionKind::kAbsoluteAfterPadding) {
    ASSIGN_OR_RETURN(auto pieces, BuildDemoUnigramVocabulary(spec.word_list, spec.vocab_size));
    tokenizer = UnigramTokenizerJson(pieces);
    vocab_size = static_cast<int64_t>(pieces.size());
    settings = roberta_specials;
  } else {
    ASSIGN_OR_RETURN(auto vocab, BuildDemoVocabulary(spec.word_list, spec.vocab_size));
    tokenizer = WordPieceTokenizerJson(vocab);
    vocab_size = static_cast<int64_t>(vocab.size());
    settings = {{"do_lower_case", true}, {"unk_token", "[UNK]"}, {"cls_token", "[CLS]"},
                {"sep_token", "[SEP]"},  {"pad_token", "[PAD]"}, {"mask_token", "[MASK]"}};
  }
  settings["model_max_length"] = spec.max_positions;
  RETURN_IF_ERROR(WriteTextFile(root / "tokenizer.json", tokenizer.dump()));
  RETURN_IF_ERROR(WriteTextFile(root / "tokenizer_config.json", settings.dump(2)));
  return vocab_size;
}

}  // namespace

absl::Status WriteDemoModel(const std::string& dir, const DemoModelSpec& spec) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  ASSIGN_OR_RETURN(const ArchitectureSpec* arch, FindFamily(spec.architecture));
  const int64_t intermediate =
      spec.intermediate_size > 0 ? spec.intermediate_size : 4 * spec.hidden_size;
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": ", ec.message()));

  ASSIGN_OR_RETURN(const int64_t vocab_size, WriteTokenizerFiles(root, spec, *arch));
  const Json config_json = ConfigJson(spec, *arch, vocab_size, intermediate);
  RETURN_IF_ERROR(WriteTextFile(root / "config.json", config_json.dump(2)));
  // The writer reads its own config back, so weights follow exactly what the loader will see.
  ASSIGN_OR_RETURN(const EncoderConfig config,
                   ParseEncoderConfig((root / "config.json").string(), config_json.dump()));
  // EmbeddingGemma's prompts; NomicBert's published task prefixes, Qwen3-Embedding's query
  // instruction for the decoders (documents get none), e5-style ones for the others.
  const Json prompts =
      arch->family == "gemma3"                   ? Json{{"query", "task: search result | query: "},
                                      {"document", "title: none | text: "},
                                      {"Retrieval-query", "task: search result | query: "},
                                      {"Retrieval-document", "title: none | text: "},
                                      {"STS", "task: sentence similarity | query: "}}
      : arch->model_type == "t5"                 ? Json::object()  // gtr-t5 has none
      : !config.adapters.empty()                 ? config_json["task_instructions"]
      : arch->family.rfind("nomic_bert", 0) == 0 ? Json{{"search_query", "search_query: "},
                                                        {"search_document", "search_document: "},
                                                        {"clustering", "clustering: "},
                                                        {"classification", "classification: "}}
      : arch->decoder                            ? Json{{"query",
                                                         "Instruct: Given a web search query, retrieve relevant passages "
                                                                                    "that answer the query\nQuery:"},
                             {"document", ""}}
                      : Json{{"query", "query: "}, {"passage", "passage: "}};
  if (spec.causal_lm_reranker && !arch->decoder)
    return absl::InvalidArgumentError("causal_lm_reranker: the decoder families only");
  if (!spec.causal_lm_reranker) {
    RETURN_IF_ERROR(WriteSentenceTransformersFiles(root, spec.hidden_size, spec.pooling,
                                                   /*normalize=*/true, prompts));
  }
  if (!config.adapters.empty()) {  // jina-embeddings-v3's modules: its own Transformer module
    const Json modules = {{{"idx", 0},
                           {"name", "transformer"},
                           {"path", ""},
                           {"type", "custom_st.Transformer"},
                           {"kwargs", {"task"}}},
                          {{"idx", 1},
                           {"name", "pooler"},
                           {"path", "1_Pooling"},
                           {"type", "sentence_transformers.models.Pooling"}},
                          {{"idx", 2},
                           {"name", "normalizer"},
                           {"path", "2_Normalize"},
                           {"type", "sentence_transformers.models.Normalize"}}};
    RETURN_IF_ERROR(WriteTextFile(root / "modules.json", modules.dump(2)));
  }
  RETURN_IF_ERROR(WriteTextFile(
      root / "README.md",
      absl::StrCat("# Demo model\n\nA ", arch->model_type,
                   "-shaped model with seeded random weights, written by write_demo_model. Its "
                   "vectors are NOT semantically meaningful: use it to try, test and benchmark "
                   "the service, never for retrieval.\n")));
  auto weights = MakeWeights(spec.seed, *arch, config);
  if (spec.num_labels > 0) weights = WithClassifierHead(spec.seed, *arch, config, weights);
  if (!config.adapters.empty()) weights = WithTaskAdapters(spec.seed, *arch, config, weights);
  const int64_t h = spec.hidden_size;
  if (arch->family == "gemma3") RETURN_IF_ERROR(WriteDenseModules(root, spec, {4 * h, h}));
  if (arch->model_type == "t5") RETURN_IF_ERROR(WriteDenseModules(root, spec, {h}));
  if (spec.splade) {
    if (arch->mlm_head.transform.empty())
      return absl::InvalidArgumentError("splade: bert or distilbert (the families with an MLM head)");
    weights = WithMlmHead(spec.seed, *arch, config, weights);
    RETURN_IF_ERROR(WriteSpladeModules(root, config.vocab_size));
  }
  return WriteSafetensors((root / "model.safetensors").string(), weights);
}

}  // namespace embedding::model_store
