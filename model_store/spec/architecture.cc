#include "model_store/spec/architecture.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model_store/spec/family_configs.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

// BERT's layer names, which RoBERTa and XLM-RoBERTa keep.
ArchitectureSpec BertLayout(std::string model_type, std::string prefix) {
  ArchitectureSpec spec;
  spec.family = model_type;
  spec.model_type = std::move(model_type);
  spec.variant_field = "position_embedding_type";
  spec.variant_values = {"absolute"};
  spec.map_config = MapBertConfig;
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

// BERT's head (and GTE "new"'s): the pooler (dense + tanh on the first token) under the base
// model's prefix, then `classifier`.
ClassifierHeadSpec PoolerHead(std::string architecture) {
  ClassifierHeadSpec head;
  head.architecture = std::move(architecture);
  head.steps = {{"pooler.dense", true, "tanh", "", ""}, {"classifier", false, "", "", ""}};
  return head;
}

// RoBERTa's head (XLM-R, CamemBERT, MPNet): classifier.dense + tanh, then classifier.out_proj,
// on the first token.
ClassifierHeadSpec RobertaHead(std::string architecture) {
  ClassifierHeadSpec head;
  head.architecture = std::move(architecture);
  head.steps = {{"classifier.dense", false, "tanh", "", ""},
                {"classifier.out_proj", false, "", "", ""}};
  return head;
}

ArchitectureSpec BertSpec() {
  ArchitectureSpec spec = BertLayout("bert", "bert.");
  spec.classifier = PoolerHead("BertForSequenceClassification");
  // BertForMaskedLM's cls.predictions (naver/splade-cocondenser-ensembledistil, splade-v3).
  spec.mlm_head = {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                   "cls.predictions.decoder", "cls.predictions.bias"};
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
  spec.classifier = RobertaHead("XLMRobertaForSequenceClassification");
  return spec;
}

// Jina's XLM-RoBERTa "flash implementation" (jina-embeddings-v3): XLM-R under model_type
// xlm-roberta with rotary positions from 0 in place of the table, NomicBert's module names (a
// fused Wqkv, out_proj, norm1, fc1/fc2, norm2, emb_ln after the embeddings), post-norm, and
// task adapters on every linear layer and embedding table (`.parametrizations.weight.original`
// beside `.0.lora_A` and `.0.lora_B`).
ArchitectureSpec XlmRobertaFlashSpec() {
  ArchitectureSpec spec;
  spec.family = "xlm-roberta-flash";
  spec.model_type = "xlm-roberta";
  spec.variant_field = "position_embedding_type";
  spec.variant_values = {"rotary"};
  spec.variant_default = false;
  spec.map_config = MapXlmRobertaFlashConfig;
  spec.known_checkpoints = "jinaai/jina-embeddings-v3";
  spec.positions = PositionKind::kRotary;
  spec.weight_prefixes = {"roberta.", ""};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "emb_ln";
  spec.layer_prefix = "encoder.layers.";
  spec.fused_qkv = "mixer.Wqkv";
  spec.attention_output = "mixer.out_proj";
  spec.attention_norm = "norm1";
  spec.mlp_in = "mlp.fc1";
  spec.mlp_out = "mlp.fc2";
  spec.output_norm = "norm2";
  return spec;
}

// RoBERTa (FacebookAI/roberta-base, DistilRoBERTa) and CamemBERT: XLM-R's layout and
// positions under their own model_type; their weights keep the "roberta." prefix.
ArchitectureSpec RobertaSpec(std::string model_type, std::string known_checkpoints,
                             std::string classifier) {
  ArchitectureSpec spec = BertLayout(std::move(model_type), "roberta.");
  spec.known_checkpoints = std::move(known_checkpoints);
  spec.positions = PositionKind::kAbsoluteAfterPadding;
  spec.classifier = RobertaHead(std::move(classifier));
  return spec;
}

// MPNet (transformers' modeling_mpnet.py): positions counted from padding_idx + 1 as RoBERTa's,
// no token types, q/k/v/o under attention.attn, and one relative position bias table the
// encoder shares with every layer.
ArchitectureSpec MpnetSpec() {
  ArchitectureSpec spec = BertLayout("mpnet", "mpnet.");
  spec.variant_field.clear();
  spec.map_config = MapMpnetConfig;
  spec.known_checkpoints =
      "sentence-transformers/all-mpnet-base-v2, sentence-transformers/multi-qa-mpnet-base-dot-v1";
  spec.positions = PositionKind::kAbsoluteAfterPadding;
  spec.token_type_embeddings.clear();
  spec.relative_attention_bias = "encoder.relative_attention_bias";
  spec.query = "attention.attn.q";
  spec.key = "attention.attn.k";
  spec.value = "attention.attn.v";
  spec.attention_output = "attention.attn.o";
  spec.attention_norm = "attention.LayerNorm";
  spec.classifier = RobertaHead("MPNetForSequenceClassification");
  return spec;
}

// DistilBERT (transformers' modeling_distilbert.py): BERT's post-norm blocks under its own
// names and config keys, no token types, LayerNorm eps fixed at 1e-12 (no config field).
ArchitectureSpec DistilBertSpec() {
  ArchitectureSpec spec;
  spec.family = spec.model_type = "distilbert";
  spec.known_checkpoints =
      "sentence-transformers/msmarco-distilbert-base-v4, "
      "sentence-transformers/msmarco-distilbert-base-tas-b, "
      "sentence-transformers/distiluse-base-multilingual-cased-v2 (with its Dense module)";
  spec.fields.hidden_size = "dim";
  spec.fields.num_layers = "n_layers";
  spec.fields.num_heads = "n_heads";
  spec.fields.intermediate_size = "hidden_dim";
  spec.fields.activation = "activation";
  spec.map_config = MapDistilBertConfig;
  spec.weight_prefixes = {"distilbert.", ""};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.position_embeddings = "embeddings.position_embeddings";
  spec.embeddings_norm = "embeddings.LayerNorm";
  spec.layer_prefix = "transformer.layer.";
  spec.query = "attention.q_lin";
  spec.key = "attention.k_lin";
  spec.value = "attention.v_lin";
  spec.attention_output = "attention.out_lin";
  spec.attention_norm = "sa_layer_norm";
  spec.mlp_in = "ffn.lin1";
  spec.mlp_out = "ffn.lin2";
  spec.output_norm = "output_layer_norm";
  // pre_classifier + ReLU on the first token, then classifier.
  // DistilBertForMaskedLM's vocab_transform / vocab_layer_norm / vocab_projector
  // (opensearch-project's neural sparse models, distilsplade).
  spec.mlm_head = {"vocab_transform", "vocab_layer_norm", "vocab_projector",
                   "vocab_projector.bias"};
  spec.classifier.architecture = "DistilBertForSequenceClassification";
  spec.classifier.steps = {{"pre_classifier", false, "relu", "", ""},
                           {"classifier", false, "", "", ""}};
  return spec;
}

// nomic-embed-text's layout: GPT-2 config names, a fused QKV, a gated MLP, rotary positions.
ArchitectureSpec NomicBertSpec() {
  ArchitectureSpec spec;
  spec.family = spec.model_type = "nomic_bert";
  spec.known_checkpoints = "nomic-ai/nomic-embed-text-v1, nomic-ai/nomic-embed-text-v1.5";
  spec.fields.hidden_size = "n_embd";
  spec.fields.num_layers = "n_layer";
  spec.fields.num_heads = "n_head";
  spec.fields.intermediate_size = "n_inner";
  spec.fields.max_positions = "n_positions";
  spec.fields.layer_norm_eps = "layer_norm_epsilon";
  spec.fields.activation = "activation_function";
  spec.map_config = MapNomicBertConfig;
  spec.positions = PositionKind::kRotary;
  spec.weight_prefixes = {"", "bert."};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "emb_ln";
  spec.layer_prefix = "encoder.layers.";
  spec.fused_qkv = "attn.Wqkv";
  spec.attention_output = "attn.out_proj";
  spec.attention_norm = "norm1";
  // fc2(fc11(x) * act(fc12(x))): the gate, stored second, is activated.
  spec.mlp = MlpKind::kGatedActivateSecond;
  spec.mlp_in = "mlp.fc11";
  spec.mlp_gate = "mlp.fc12";
  spec.mlp_out = "mlp.fc2";
  spec.output_norm = "norm2";
  // v1's gated MLPs; nomic_bert_moe takes "gelu".
  spec.variant_field = "activation_function";
  spec.variant_values = {"swiglu", "geglu"};
  spec.variant_default = true;
  return spec;
}

// nomic-embed-text-v2-moe (nomic's contrastors code, TEI's nomic.rs): NomicBert with a plain
// GELU MLP (fc1, fc2) and, every moe_every_n_layers-th layer from layer 1, a mixture of experts
// in its place. Told from v1 by activation_function gelu.
ArchitectureSpec NomicBertMoeSpec() {
  ArchitectureSpec spec = NomicBertSpec();
  spec.family = "nomic_bert_moe";
  spec.known_checkpoints = "nomic-ai/nomic-embed-text-v2-moe";
  spec.variant_field = "activation_function";
  spec.variant_values = {"gelu"};
  spec.variant_default = false;
  spec.mlp = MlpKind::kPlain;
  spec.mlp_in = "mlp.fc1";
  spec.mlp_gate.clear();
  spec.moe = {"mlp.router.layer", "mlp.experts.mlp.w1", "mlp.experts.mlp.w2", "mlp.experts.bias"};
  return spec;
}

// JinaBERT v2 (jinaai/jina-bert-implementation): BERT's names for attention and embeddings,
// no position table (symmetric ALiBi), a GLU feed-forward whose first half is activated, and
// its own post-norm.
ArchitectureSpec JinaBertSpec() {
  ArchitectureSpec spec = BertLayout("bert", "bert.");
  spec.family = "jina_bert";
  spec.variant_values = {"alibi"};
  spec.variant_default = false;
  spec.map_config = MapJinaBertConfig;
  spec.known_checkpoints = "jinaai/jina-embeddings-v2-base-en, jinaai/jina-embeddings-v2-small-en";
  spec.positions = PositionKind::kAlibi;
  spec.position_embeddings.clear();
  // wo(act(gated) * non_gated) over gated_layers = [gated; non_gated].
  spec.mlp = MlpKind::kGatedActivateFirst;
  spec.mlp_in = "mlp.gated_layers";
  spec.mlp_out = "mlp.wo";
  spec.output_norm = "mlp.layernorm";
  return spec;
}

// GTE "new" (Alibaba-NLP/new-impl): post-norm, one packed qkv_proj, rotary with fixed NTK
// scaling and an optional logn attention scale, up_gate_proj whose second half is activated.
ArchitectureSpec GteSpec() {
  ArchitectureSpec spec;
  spec.family = spec.model_type = "new";
  spec.model_type_aliases = {"gte"};
  spec.known_checkpoints =
      "Alibaba-NLP/gte-base-en-v1.5, Alibaba-NLP/gte-large-en-v1.5, "
      "Alibaba-NLP/gte-multilingual-base, Snowflake/snowflake-arctic-embed-m-v2.0";
  spec.map_config = MapGteConfig;
  spec.positions = PositionKind::kRotary;
  spec.weight_prefixes = {"new.", ""};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "embeddings.LayerNorm";
  spec.layer_prefix = "encoder.layer.";
  spec.fused_qkv = "attention.qkv_proj";
  spec.attention_output = "attention.o_proj";
  spec.attention_norm = "attn_ln";
  // down(up * act(gate)) over up_gate_proj = [up; gate].
  spec.mlp = MlpKind::kGatedActivateSecond;
  spec.mlp_in = "mlp.up_gate_proj";
  spec.mlp_out = "mlp.down_proj";
  spec.output_norm = "mlp_ln";
  spec.classifier = PoolerHead("NewForSequenceClassification");
  return spec;
}

// ModernBERT (transformers' modeling_modernbert.py): pre-norm LayerNorm without biases, no
// attention norm in layer 0 and a final norm, a fused Wqkv, global attention every few layers
// and a local band elsewhere, each with its rotary base, Wi whose first half is activated.
ArchitectureSpec ModernBertSpec() {
  ArchitectureSpec spec;
  spec.family = spec.model_type = "modernbert";
  spec.known_checkpoints =
      "answerdotai/ModernBERT-base, answerdotai/ModernBERT-large, "
      "nomic-ai/modernbert-embed-base, Alibaba-NLP/gte-modernbert-base, "
      "ibm-granite/granite-embedding-english-r2";
  spec.map_config = MapModernBertConfig;
  spec.fields.activation = "hidden_activation";
  spec.fields.layer_norm_eps = "norm_eps";
  spec.positions = PositionKind::kRotary;
  // ModernBertForMaskedLM saves the encoder under model. (its MLM head is never read).
  spec.weight_prefixes = {"model.", ""};
  spec.word_embeddings = "embeddings.tok_embeddings";
  spec.embeddings_norm = "embeddings.norm";
  spec.layer_prefix = "layers.";
  spec.fused_qkv = "attn.Wqkv";
  spec.attention_output = "attn.Wo";
  spec.attention_norm = "attn_norm";
  // Wo(act(input) * gate) over Wi = [input; gate].
  spec.mlp = MlpKind::kGatedActivateFirst;
  spec.mlp_in = "mlp.Wi";
  spec.mlp_out = "mlp.Wo";
  spec.output_norm = "mlp_norm";
  spec.first_layer_attention_norm = false;
  spec.final_norm = "final_norm";
  // head.dense (biased per classifier_bias) + classifier_activation + head.norm on the token
  // classifier_pooling picks (cls, or the mean), then classifier.
  spec.classifier.architecture = "ModernBertForSequenceClassification";
  spec.classifier.steps = {{"head.dense", false, "config", "head.norm", "classifier_bias"},
                           {"classifier", false, "", "", ""}};
  spec.classifier.pooling_field = "classifier_pooling";
  spec.classifier.activation_field = "classifier_activation";
  return spec;
}

// The decoders' layout (transformers' modeling_llama.py and its descendants): pre-norm RMSNorm,
// separate q/k/v/o projections with grouped key/value heads, rotary positions, a SwiGLU MLP
// down(silu(gate) * up), a final norm; causal unless the config says otherwise. The language
// model head (lm_head) is never read.
ArchitectureSpec DecoderLayout(std::string model_type, std::string known_checkpoints,
                               std::string classifier) {
  ArchitectureSpec spec;
  spec.family = spec.model_type = std::move(model_type);
  spec.known_checkpoints = std::move(known_checkpoints);
  spec.map_config = MapDecoderConfig;
  spec.decoder = true;
  spec.fields.layer_norm_eps = "rms_norm_eps";
  spec.positions = PositionKind::kRotary;
  spec.weight_prefixes = {"model.", ""};
  spec.word_embeddings = "embed_tokens";
  spec.layer_prefix = "layers.";
  spec.query = "self_attn.q_proj";
  spec.key = "self_attn.k_proj";
  spec.value = "self_attn.v_proj";
  spec.attention_output = "self_attn.o_proj";
  spec.attention_norm = "input_layernorm";
  // down(act(gate) * up): stacked as [gate; up], the first half activated.
  spec.mlp = MlpKind::kGatedActivateFirst;
  spec.mlp_in = "mlp.gate_proj";
  spec.mlp_gate = "mlp.up_proj";
  spec.mlp_out = "mlp.down_proj";
  spec.output_norm = "post_attention_layernorm";
  spec.final_norm = "norm";
  // transformers' <Decoder>ForSequenceClassification: `score`, without bias, on the last token
  // (tomaarsen/Qwen3-Reranker-0.6B-seq-cls: the yes row less the no row of Qwen3-Reranker's head).
  spec.classifier.architecture = std::move(classifier);
  spec.classifier.steps = {{"score", false, "", "", "", /*bias=*/false}};
  spec.classifier.last_token = true;
  // Qwen/Qwen3-Reranker-*: a Qwen3ForCausalLM read as a classifier through classifier_from_token.
  spec.classifier.lm_head = "lm_head";
  return spec;
}

// Gemma3's text model (google/embeddinggemma-300m): the decoders' layout with Gemma's sandwich
// norms, RMSNorm as x (1 + w), q/k norms, a GeGLU MLP (tanh GELU), embeddings scaled by
// sqrt(hidden), sliding and full layers with their own rotary bases, bidirectional for embedding.
ArchitectureSpec Gemma3Spec() {
  ArchitectureSpec spec = DecoderLayout("gemma3_text", "google/embeddinggemma-300m", "");
  spec.family = "gemma3";
  spec.map_config = MapGemma3Config;
  spec.weight_prefixes = {"", "model.", "language_model.model."};
  spec.query_norm = "self_attn.q_norm";
  spec.key_norm = "self_attn.k_norm";
  spec.attention_post_norm = "post_attention_layernorm";
  spec.output_norm = "pre_feedforward_layernorm";
  spec.output_post_norm = "post_feedforward_layernorm";
  spec.norm_weight_offset = 1.0;
  spec.classifier = ClassifierHeadSpec();  // no sequence-classification head served
  return spec;
}

// T5's encoder (transformers' T5EncoderModel, as sentence-transformers ships gtr-t5 and
// sentence-t5): pre-norm RMSNorm blocks without biases, no position table but one relative
// attention bias in the first layer, bucketed bidirectionally and shared by every layer, and
// no 1/sqrt(d) (T5 folds it into its weights). The feed-forward block is ReLU ("relu") or a
// gated tanh GELU ("gated-gelu", T5 v1.1), one spec each, told apart by feed_forward_proj.
ArchitectureSpec T5Spec(bool gated) {
  ArchitectureSpec spec;
  spec.model_type = "t5";
  spec.family = gated ? "t5_gated" : "t5";
  spec.known_checkpoints = gated ? "google/t5-v1_1-base (encoder), google/flan-t5-base (encoder)"
                                 : "sentence-transformers/gtr-t5-base, sentence-transformers/"
                                   "gtr-t5-large, sentence-transformers/sentence-t5-base";
  spec.variant_field = "feed_forward_proj";
  spec.variant_values = {gated ? "gated-gelu" : "relu"};
  spec.variant_default = !gated;  // T5Config's default is relu
  spec.fields.hidden_size = "d_model";
  spec.fields.num_layers = "num_layers";
  spec.fields.num_heads = "num_heads";
  spec.fields.intermediate_size = "d_ff";
  spec.fields.max_positions = "n_positions";
  spec.fields.default_max_positions = 512;  // t5's tokenizer and sentence-transformers' bound
  spec.fields.layer_norm_eps = "layer_norm_epsilon";
  spec.fields.activation = "feed_forward_proj";
  spec.map_config = MapT5Config;
  spec.positions = PositionKind::kAbsolute;  // with no table: positions only in the bias
  spec.weight_prefixes = {""};
  spec.word_embeddings = "shared";  // encoder.embed_tokens is the same tensor, tied
  spec.relative_attention_bias = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias";
  spec.layer_prefix = "encoder.block.";
  spec.query = "layer.0.SelfAttention.q";
  spec.key = "layer.0.SelfAttention.k";
  spec.value = "layer.0.SelfAttention.v";
  spec.attention_output = "layer.0.SelfAttention.o";
  spec.attention_norm = "layer.0.layer_norm";
  spec.mlp = gated ? MlpKind::kGatedActivateFirst : MlpKind::kPlain;
  spec.mlp_in = gated ? "layer.1.DenseReluDense.wi_0" : "layer.1.DenseReluDense.wi";
  if (gated) spec.mlp_gate = "layer.1.DenseReluDense.wi_1";
  spec.mlp_out = "layer.1.DenseReluDense.wo";
  spec.output_norm = "layer.1.layer_norm";
  spec.final_norm = "encoder.final_layer_norm";
  return spec;
}

ArchitectureSpec Qwen3Spec() {
  ArchitectureSpec spec = DecoderLayout(
      "qwen3", "Qwen/Qwen3-Embedding-0.6B, Qwen/Qwen3-Embedding-4B, Qwen/Qwen3-Embedding-8B",
      "Qwen3ForSequenceClassification");
  spec.query_norm = "self_attn.q_norm";
  spec.key_norm = "self_attn.k_norm";
  return spec;
}

ArchitectureSpec Qwen2Spec() {
  ArchitectureSpec spec = DecoderLayout(
      "qwen2", "Alibaba-NLP/gte-Qwen2-1.5B-instruct, Alibaba-NLP/gte-Qwen2-7B-instruct",
      "Qwen2ForSequenceClassification");
  spec.map_config = MapQwen2Config;
  return spec;
}

ArchitectureSpec MistralSpec() {
  ArchitectureSpec spec =
      DecoderLayout("mistral", "intfloat/e5-mistral-7b-instruct, Salesforce/SFR-Embedding-2_R",
                    "MistralForSequenceClassification");
  spec.map_config = MapMistralConfig;
  return spec;
}

bool Named(const ArchitectureSpec& spec, const std::string& model_type) {
  return spec.model_type == model_type ||
         std::find(spec.model_type_aliases.begin(), spec.model_type_aliases.end(), model_type) !=
             spec.model_type_aliases.end();
}

absl::Status Unsupported(const std::string& model_type) {
  return absl::InvalidArgumentError(absl::StrCat("config.json: unsupported model_type '",
                                                 model_type,
                                                 "'; supported: ", SupportedArchitectures()));
}

}  // namespace

const std::vector<ArchitectureSpec>& AllArchitectures() {
  static const auto* const kSpecs = new std::vector<ArchitectureSpec>{
      BertSpec(),
      XlmRobertaSpec(),
      XlmRobertaFlashSpec(),
      RobertaSpec("roberta",
                  "sentence-transformers/all-distilroberta-v1, FacebookAI/roberta-base, "
                  "sentence-transformers/nli-roberta-base-v2",
                  "RobertaForSequenceClassification"),
      RobertaSpec("camembert", "dangvantuan/sentence-camembert-base, almanach/camembert-base",
                  "CamembertForSequenceClassification"),
      DistilBertSpec(),
      MpnetSpec(),
      NomicBertSpec(),
      NomicBertMoeSpec(),
      GteSpec(),
      JinaBertSpec(),
      ModernBertSpec(),
      Qwen3Spec(),
      Qwen2Spec(),
      Gemma3Spec(),
      T5Spec(/*gated=*/false),
      T5Spec(/*gated=*/true),
      MistralSpec(),
      DecoderLayout("llama", "McGill-NLP/LLM2Vec-Meta-Llama-3-8B-Instruct-mntp",
                    "LlamaForSequenceClassification")};
  return *kSpecs;
}

absl::StatusOr<const ArchitectureSpec*> FindFamily(const std::string& name) {
  std::vector<std::string> families;
  for (const auto& spec : AllArchitectures()) {
    if (spec.family == name) return &spec;
    families.push_back(spec.family);
  }
  return absl::InvalidArgumentError(absl::StrCat("architecture: unknown family '", name,
                                                 "'; known: ", absl::StrJoin(families, ", ")));
}

absl::StatusOr<const ArchitectureSpec*> FindArchitectureForConfig(const nlohmann::json& config) {
  const auto type = config.find("model_type");
  const std::string model_type =
      type != config.end() && type->is_string() ? type->get<std::string>() : "";
  std::vector<std::string> variants;  // every value the specs of this model_type accept
  std::string field;
  for (const auto& spec : AllArchitectures()) {
    if (!Named(spec, model_type)) continue;
    if (spec.variant_field.empty()) return &spec;
    field = spec.variant_field;
    const auto value = config.find(spec.variant_field);
    if (value == config.end() || value->is_null()) {
      if (spec.variant_default) return &spec;
    } else if (value->is_string() &&
               std::find(spec.variant_values.begin(), spec.variant_values.end(),
                         value->get<std::string>()) != spec.variant_values.end()) {
      return &spec;
    }
    variants.insert(variants.end(), spec.variant_values.begin(), spec.variant_values.end());
  }
  if (field.empty()) return Unsupported(model_type);
  const auto value = config.find(field);
  return absl::InvalidArgumentError(absl::StrCat(
      "config.json: field '", field, "' is ", value == config.end() ? "absent" : value->dump(),
      " for model_type '", model_type, "'; supported: ", absl::StrJoin(variants, ", ")));
}

std::string SupportedArchitectures() {
  std::vector<std::string> names;
  for (const auto& spec : AllArchitectures()) names.push_back(spec.model_type);
  return absl::StrJoin(names, ", ");
}

}  // namespace embedding::model_store
