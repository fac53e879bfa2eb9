// Writes a complete model directory (any family of architecture.h) in Hugging Face layout with
// seeded random weights, so the service can run (and be tested and benchmarked) without the Hub.
// Its vectors are not semantically meaningful.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace embedding::model_store {

struct DemoModelSpec {
  std::string architecture = "bert";  // a model_type of architecture.h
  int num_layers = 2;
  int hidden_size = 128;
  int num_heads = 4;
  int num_kv_heads = 0;       // decoders: key/value heads (0: one per query head)
  int head_dim = 0;           // decoders: a head's width when not hidden / heads (0: that)
  int intermediate_size = 0;  // 0: four times hidden_size, as in BERT
  int max_positions = 512;    // tokens one window holds, special tokens included
  int vocab_size = 12000;
  uint64_t seed = 20241031;
  std::string pooling = "mean";  // cls | mean | max | last_token
  // > 0: a cross-encoder (1) or classifier checkpoint, <Family>ForSequenceClassification with
  // this many labels, laid out as the Hub's: the encoder under its prefix, the head beside it.
  int num_labels = 0;
  // A SPLADE model as sentence-transformers' SparseEncoder saves one: <Family>ForMaskedLM with
  // its masked-LM head (the decoder tied to the word embeddings) and modules.json's
  // MLMTransformer + SpladePooling (bert and distilbert).
  bool splade = false;
  // Qwen/Qwen3-Reranker's layout (decoders): a <Family>ForCausalLM with tied embeddings whose
  // tokenizer has the chat tokens, bare "yes" and "no", and no post-processor template, and no
  // sentence-transformers modules. Served as a reranker through --hf_overrides.
  bool causal_lm_reranker = false;
  // nomic_bert_moe: experts per expert layer, and every how many layers one is (0: none, a
  // plain MLP in every layer).
  int num_experts = 8;
  int moe_every = 2;
  std::string word_list = "/usr/share/dict/words";
};

// Writes config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
// modules.json, 1_Pooling/config.json, config_sentence_transformers.json and a README into
// `dir` (created if needed). Same spec, same bytes. INVALID_ARGUMENT naming the field for a
// bad size; NOT_FOUND without the word list; INTERNAL for I/O failures.
absl::Status WriteDemoModel(const std::string& dir, const DemoModelSpec& spec);

}  // namespace embedding::model_store
