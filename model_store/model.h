// A model directory loaded into memory: config, tokenizer, encoder and sentence-transformers
// settings. Immutable after Load, so every method is thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/dtype/dtype_choice.h"
#include "model_store/encoder/encoder.h"
#include "model_store/formats/sentence_transformers_config.h"
#include "model_store/formats/tempscale_schedule.h"
#include "model_store/late_interaction.h"
#include "model_store/spec/encoder_config.h"
#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

struct ModelOptions {
  EncoderOptions encoder;
  // For dtype kAuto: where the choice is kept (see dtype_choice_cache.h; empty: measure on
  // every load) and the model's content hash it is kept under (ComputeModelVersion).
  std::string dtype_cache_dir;
  std::string content_version;
  // The serving configuration's pooling, overriding what the checkpoint declares.
  std::optional<PoolingMode> pooling_override;
  // A TempScale schedule file to use instead of the directory's tempscale.json (a Hub model's
  // cache is shared and read-only to the server); empty: the directory's.
  std::string tempscale_schedule_file;
  // Tokens one window may hold, special tokens included (--max_input_length); 0: the model's
  // own window. It may lower the window, never raise it (Load refuses that).
  int64_t max_input_length = 0;
  // A JSON object whose keys replace config.json's (--hf_overrides): how Qwen3-Reranker, saved
  // as a Qwen3ForCausalLM, is read as a reranker. Empty: none.
  std::string config_overrides;
  // Where Load's own forward passes run (the dtype trials, the batch-invariance probe): the
  // thread that will serve the model (see ForwardRunner). Empty: the loading thread.
  ForwardRunner run_forward;
};

class Model {
 public:
  // Loads the directory in Hugging Face layout. Errors name the file (and tensor or field):
  // NOT_FOUND for missing files, DATA_LOSS for corrupt ones, INVALID_ARGUMENT for an
  // unsupported model_type (listing the supported ones) or a bad tempscale.json (naming the
  // field), FAILED_PRECONDITION for bf16 on a CPU without native support (or int8 without
  // oneDNN). dtype kAuto takes the choice cached for this content and CPU, or measures every
  // dtype, keeps the fastest that passes its accuracy guard (see dtype_choice.h) and caches it.
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& model_dir,
                                                     const ModelOptions& options);
  ~Model();

  // Written by write_demo_model (config.json says "demo_model"): its vectors carry no meaning.
  bool is_demo() const { return config().demo_model; }
  // The special tokens the post-processor puts before and after a sequence's content (and a
  // late-interaction model's document marker after the first).
  const std::vector<int32_t>& special_prefix() const {
    return late_interaction_ ? late_interaction_->prefix(InputRole::kDocument)
                             : tokenizer_->config().prefix_ids;
  }
  const std::vector<int32_t>& special_suffix() const { return tokenizer_->config().suffix_ids; }
  // A late-interaction (ColBERT) model's encoding rules (one vector per token, scored by
  // MaxSim); nullptr for every other model.
  const LateInteraction* late_interaction() const {
    return late_interaction_ ? &*late_interaction_ : nullptr;
  }
  const EncoderConfig& config() const { return encoder_->config(); }
  // An embedder, or a *ForSequenceClassification checkpoint: a reranker (one label) or a
  // classifier; its head and labels are config().classifier.
  ModelKind kind() const { return config().classifier.kind; }
  // The prompt a reranker reads pairs inside (Qwen3-Reranker's); empty for most. Its suffix is
  // already the pair template's end; the query and the document's lead are the caller's.
  const ScorePrompt& score_prompt() const { return config().classifier.prompt; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const Encoder& encoder() const { return *encoder_; }
  const SentenceTransformersConfig& sentence_transformers() const { return st_config_; }
  PoolingMode pooling() const { return pooling_; }
  // τ by sequence length for AUTO requests (tempscale.json; τ = 1 everywhere without one).
  const TempScaleSchedule& tempscale() const { return tempscale_; }
  // What --dtype=auto measured, one entry per dtype; empty when a dtype was named.
  const std::vector<DTypeTrial>& dtype_trials() const { return dtype_trials_; }
  // Where auto's choice came from: "measured now", or the cache file it was read from, with
  // what happened to the cache ("; not cached: ..."); empty when a dtype was named.
  const std::string& dtype_choice_source() const { return dtype_choice_source_; }
  // Tokens one window holds, special tokens included: the position table, or less where
  // sentence-transformers' `max_seq_length`, a late-interaction model's `document_length` or
  // ModelOptions::max_input_length says so.
  int64_t max_input_length() const { return window_; }
  // Where that figure comes from ("config.json max_position_embeddings").
  const std::string& window_source() const { return window_source_; }
  // On a GPU: what one token of a forward pass takes there at most beyond the weights,
  // measured at load over one full window (server/core/batch_budget.h sizes batches from it);
  // 0 on the CPU.
  int64_t device_bytes_per_token() const { return device_bytes_per_token_; }
  // The worst |alone - batched| of a pooled vector's component, measured at load where the
  // encoder runs LibTorch's own ops (a GPU's path: its libraries pick kernels by shape; see
  // dtype/batch_invariance.h). Unset on the CPU's kernels, bit-identical by design and by the
  // suite's BatchInvariance tests.
  std::optional<double> batch_invariance_bound() const { return batch_invariance_bound_; }
  // Content tokens one window holds: the window less the special tokens.
  int64_t max_content_tokens() const {
    return window_ - static_cast<int64_t>(special_prefix().size() + special_suffix().size());
  }
  // The weights' layout ("pytorch_model.bin") and the tensors in it the model does not read,
  // each as "name (I64 [1, 512])", for the load log.
  const std::string& weights_layout() const { return weights_layout_; }
  const std::vector<std::string>& unread_tensors() const { return unread_tensors_; }

 private:
  Model() = default;

  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<LateInteraction> late_interaction_;
  std::unique_ptr<Encoder> encoder_;
  SentenceTransformersConfig st_config_;
  PoolingMode pooling_ = PoolingMode::kCls;
  TempScaleSchedule tempscale_;
  std::vector<DTypeTrial> dtype_trials_;
  std::string dtype_choice_source_;
  int64_t window_ = 0;
  std::string window_source_;
  int64_t device_bytes_per_token_ = 0;
  std::optional<double> batch_invariance_bound_;
  std::string weights_layout_;
  std::vector<std::string> unread_tensors_;
};

}  // namespace embedding::model_store
