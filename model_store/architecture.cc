#include "model_store/architecture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace embedding::model_store {
namespace {

// BERT's layer names, which RoBERTa and XLM-RoBERTa keep.
ArchitectureSpec BertLayout(std::string model_type, std::string prefix) {
  ArchitectureSpec spec;
  spec.model_type = std::move(model_type);
  spec.weight_prefixes = {std::move(prefix), ""};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.position_embeddings = "embeddings.position_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "embeddings.LayerNorm";
  spec.layer_prefix = "encoder.layer.";
  spec.query = "attention.self.query";
  spec.key = "attention.self.key";
  spec.value = "attention.self.value";
  spec.attention_output = "attention.output.dense";
  spec.attention_norm = "attention.output.LayerNorm";
  spec.mlp_in = "intermediate.dense";
  spec.mlp_out = "output.dense";
  spec.output_norm = "output.LayerNorm";
  return spec;
}

ArchitectureSpec BertSpec() {
  ArchitectureSpec spec = BertLayout("bert", "bert.");
  spec.known_checkpoints =
      "BAAI/bge-small-en-v1.5, BAAI/bge-base-en-v1.5, BAAI/bge-large-en-v1.5, "
      "sentence-transformers/all-MiniLM-L6-v2, intfloat/e5-base-v2, thenlper/gte-base";
  return spec;
}

ArchitectureSpec XlmRobertaSpec() {
  ArchitectureSpec spec = BertLayout("xlm-roberta", "roberta.");
  spec.known_checkpoints =
      "BAAI/bge-m3, intfloat/multilingual-e5-small, intfloat/multilingual-e5-base, "
      "intfloat/multilingual-e5-large, sentence-transformers/paraphrase-multilingual-mpnet-base-v2";
  // As Hugging Face's create_position_ids_from_input_ids: positions count the non-padding
  // tokens from padding_idx + 1.
  spec.positions = PositionKind::kAbsoluteAfterPadding;
  return spec;
}

// nomic-embed-text's layout: GPT-2 config names, a fused QKV, a gated MLP, rotary positions.
ArchitectureSpec NomicBertSpec() {
  ArchitectureSpec spec;
  spec.model_type = "nomic_bert";
  spec.known_checkpoints = "nomic-ai/nomic-embed-text-v1, nomic-ai/nomic-embed-text-v1.5";
  spec.fields.hidden_size = "n_embd";
  spec.fields.num_layers = "n_layer";
  spec.fields.num_heads = "n_head";
  spec.fields.intermediate_size = "n_inner";
  spec.fields.max_positions = "n_positions";
  spec.fields.layer_norm_eps = "layer_norm_epsilon";
  spec.fields.activation = "activation_function";
  spec.positions = PositionKind::kRotary;
  spec.weight_prefixes = {"", "bert."};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "emb_ln";
  spec.layer_prefix = "encoder.layers.";
  spec.fused_qkv = "attn.Wqkv";
  spec.attention_output = "attn.out_proj";
  spec.attention_norm = "norm1";
  spec.mlp_in = "mlp.fc11";
  spec.mlp_gate = "mlp.fc12";
  spec.mlp_out = "mlp.fc2";
  spec.output_norm = "norm2";
  return spec;
}

}  // namespace

const std::vector<ArchitectureSpec>& AllArchitectures() {
  static const auto* const kSpecs =
      new std::vector<ArchitectureSpec>{BertSpec(), XlmRobertaSpec(), NomicBertSpec()};
  return *kSpecs;
}

absl::StatusOr<const ArchitectureSpec*> FindArchitecture(const std::string& model_type) {
  for (const auto& spec : AllArchitectures()) {
    if (spec.model_type == model_type) return &spec;
  }
  return absl::InvalidArgumentError(absl::StrCat("config.json: unsupported model_type '",
                                                 model_type,
                                                 "'; supported: ", SupportedArchitectures()));
}

std::string SupportedArchitectures() {
  std::vector<std::string> names;
  for (const auto& spec : AllArchitectures()) names.push_back(spec.model_type);
  return absl::StrJoin(names, ", ");
}

}  // namespace embedding::model_store
