#include "model_store/model.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/freed_memory.h"
#include "common/status_macros.h"
#include "model_store/dtype/batch_invariance.h"
#include "model_store/dtype/dtype_choice.h"
#include "model_store/dtype/dtype_choice_cache.h"
#include "model_store/dtype/guard_probe.h"
#include "model_store/encoder/classifier_head_layers.h"
#include "model_store/encoder/dense_layers.h"
#include "model_store/encoder/splade_head.h"
#include "model_store/encoder/token_heads.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/late_interaction_config.h"
#include "model_store/spec/architecture.h"

namespace embedding::model_store {
namespace {

// --dtype=auto: the cached choice when there is one (only that dtype is built), else a
// measurement, whose losing candidates' memory goes back to the system before serving (Load).
absl::StatusOr<DTypeChoice> LoadAutoEncoder(const EncoderConfig& config,
                                            const ArchitectureSpec& spec,
                                            const Checkpoint& checkpoint,
                                            const ModelOptions& options, PoolingMode pooling,
                                            const Tokenizer& tokenizer) {
  const DTypeChoiceCache cache(options.content_version.empty() ? "" : options.dtype_cache_dir);
  const int threads = options.encoder.intra_op_threads;
  if (auto cached = cache.Lookup(options.content_version, threads)) {
    EncoderOptions chosen = options.encoder;
    chosen.dtype = cached->chosen;
    // A choice this machine can no longer build (a library changed under the same version)
    // is measured again rather than refused.
    if (auto encoder = Encoder::Create(config, spec, checkpoint, chosen); encoder.ok())
      return DTypeChoice{*std::move(encoder), std::move(cached->trials), cached->path};
  }
  ASSIGN_OR_RETURN(DTypeChoice choice, ChooseComputeDType(config, spec, checkpoint, options.encoder,
                                                          pooling, tokenizer, options.run_forward));
  choice.source = "measured now";
  if (!cache.enabled()) {
    choice.source += "; not cached (no --dtype-cache-dir)";
  } else if (absl::Status stored = cache.Store(options.content_version, threads,
                                               choice.encoder->dtype(), choice.trials);
             !stored.ok()) {
    choice.source += absl::StrCat("; not cached: ", stored.message());
  } else {
    choice.source += absl::StrCat(", cached in ", cache.PathFor(options.content_version, threads));
  }
  return choice;
}

// The window, special tokens included: the position table, lowered by sentence-transformers'
// max_seq_length (as it truncates) and then by the option. INVALID_ARGUMENT naming the option
// when it would raise the window: positions past the table do not exist, and past
// max_seq_length the model was not trained.
absl::Status ChooseWindow(int64_t positions, const SentenceTransformersConfig& st, int64_t option,
                          int64_t specials, int64_t* window, std::string* source) {
  *window = positions;
  *source = "config.json max_position_embeddings";
  if (st.max_seq_length && *st.max_seq_length < positions) {
    *window = *st.max_seq_length;
    *source = absl::StrCat(st.max_seq_length_file, " max_seq_length");
  }
  if (option > *window || (option > 0 && option <= specials)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_input_length=", option, ": allowed ", specials + 1, "..", *window,
                     " for this model (its window is ", *window, " tokens by ", *source, ", ",
                     specials, " of them special; the flag may lower the window, never raise it)"));
  }
  if (option > 0 && option < *window) {
    *window = option;
    *source = "--max_input_length";
  }
  return absl::OkStatus();
}

// classifier_from_token's vocabulary ids, and the prompt's suffix made the pair template's end.
// INVALID_ARGUMENT naming the field for a token the vocabulary lacks; DATA_LOSS for a suffix
// that is not valid UTF-8.
absl::Status ResolveScoreTokens(const std::string& model_dir, ClassifierConfig* classifier,
                                Tokenizer* tokenizer) {
  for (const std::string& token : classifier->from_tokens) {
    const int32_t id = tokenizer->TokenToId(token);
    if (id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(model_dir, "/config.json: classifier_from_token '", token,
                       "' is not a token of tokenizer.json's vocabulary"));
    }
    classifier->from_token_ids.push_back(id);
  }
  // Without a pair template Load refuses the reranker next.
  if (classifier->prompt.empty() || !tokenizer->has_pair_template()) return absl::OkStatus();
  auto suffix = tokenizer->Tokenize(classifier->prompt.suffix, "score_prompt.document_template");
  if (!suffix.ok()) return absl::DataLossError(suffix.status().message());
  tokenizer->AppendToPairTemplate(std::move(suffix->ids));
  return absl::OkStatus();
}

// What a late-interaction model needs beyond its files: an embedding checkpoint without a
// SPLADE head, a query that fits the position table, and, where the query's expansion is read
// by nothing, attention that a key limit leaves exact (Encoder::KeyLimitExact, checked once
// the encoder exists). INVALID_ARGUMENT naming the layout.
absl::Status CheckLateInteraction(const LateInteractionConfig& late, const EncoderConfig& config,
                                  const SentenceTransformersConfig& st) {
  if (config.classifier.kind != ModelKind::kEmbedding || st.splade) {
    return absl::InvalidArgumentError(absl::StrCat(
        late.layout, ": a late-interaction model over a ",
        st.splade ? "SPLADE head" : config.classifier.architecture, " is not a known layout"));
  }
  if (late.query_length > config.max_sequence_length()) {
    return absl::InvalidArgumentError(absl::StrCat(
        late.layout, ": query_length ", late.query_length, " exceeds the ",
        config.max_sequence_length(), " positions of config.json; allowed [1, ",
        config.max_sequence_length(), "]"));
  }
  return absl::OkStatus();
}

std::string Describe(const TensorView& view) {
  return absl::StrCat(view.name, " (", DTypeName(view.dtype), " [", absl::StrJoin(view.shape, ", "),
                      "])");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& model_dir,
                                                   const ModelOptions& options) {
  // Declared first, so it runs last, on every path: the allocator keeps what loading freed (the
  // fp32 weights int8 replaced, auto's losing candidates) unless asked to give it back. A
  // BERT-base that chose bf16 (422 MiB alone) idled at 1,150 MiB without it, at 430 MiB with
  // it (tests/bench/dtype_auto_startup_bench.py); an int8 one on tcmalloc, 632 MiB against 360.
  struct ReturnFreedMemoryOnExit {
    ~ReturnFreedMemoryOnExit() { ReturnFreedMemoryToSystem(); }
  } return_freed_memory;
  if (!std::filesystem::is_directory(model_dir))
    return absl::NotFoundError(absl::StrCat(model_dir, ": not a directory"));
  auto model = std::unique_ptr<Model>(new Model());
  ASSIGN_OR_RETURN(EncoderConfig config,
                   LoadEncoderConfig(model_dir + "/config.json", options.config_overrides));
  ASSIGN_OR_RETURN(const ArchitectureSpec* spec, FindFamily(config.family));
  ASSIGN_OR_RETURN(model->tokenizer_, Tokenizer::Load(model_dir));
  if (static_cast<int64_t>(model->tokenizer_->vocab_size()) > config.vocab_size) {
    return absl::DataLossError(
        absl::StrCat(model_dir, ": tokenizer has ", model->tokenizer_->vocab_size(),
                     " tokens but config.json vocab_size is ", config.vocab_size));
  }
  RETURN_IF_ERROR(ResolveScoreTokens(model_dir, &config.classifier, model->tokenizer_.get()));
  ASSIGN_OR_RETURN(model->st_config_, LoadSentenceTransformersConfig(model_dir));
  // The encoder copies the weights out, so the mapping is released when Load returns. Opening
  // reads the headers only (Stanford ColBERT's projection is found by name).
  ASSIGN_OR_RETURN(auto checkpoint, Checkpoint::Open(model_dir));
  ASSIGN_OR_RETURN(const std::optional<LateInteractionConfig> late,
                   ReadLateInteractionConfig(model_dir, *checkpoint));
  if (late.has_value()) {
    RETURN_IF_ERROR(CheckLateInteraction(*late, config, model->st_config_));
    ASSIGN_OR_RETURN(model->late_interaction_,
                     LateInteraction::Resolve(*late, model_dir, *model->tokenizer_));
    // PyLate cuts a document to document_length (sentence-transformers' max_seq_length is
    // whichever length it used last, less the marker).
    model->st_config_.max_seq_length = late->document_length;
    model->st_config_.max_seq_length_file = absl::StrCat(late->layout, " document_length");
  }
  // Decided before any weight is read: a refused option costs nothing.
  RETURN_IF_ERROR(ChooseWindow(
      config.max_sequence_length(), model->st_config_, options.max_input_length,
      static_cast<int64_t>(model->special_prefix().size() + model->special_suffix().size()),
      &model->window_, &model->window_source_));
  ASSIGN_OR_RETURN(model->tempscale_,
                   options.tempscale_schedule_file.empty()
                       ? TempScaleSchedule::Load(model_dir)
                       : TempScaleSchedule::LoadFile(options.tempscale_schedule_file));
  ASSIGN_OR_RETURN(TokenHeads heads, LoadTokenHeads(model_dir, config.hidden_size));
  ASSIGN_OR_RETURN(std::vector<DenseLayer> dense,
                   LoadDenseLayers(model->st_config_.dense, config.hidden_size));
  if (late.has_value()) {  // the projection is per token, not of a pooled vector
    ASSIGN_OR_RETURN(heads.late_projection,
                     LoadLateProjection(*late, std::move(dense), config.hidden_size, *checkpoint));
    dense.clear();
  }
  model->pooling_ =
      options.pooling_override.value_or(model->st_config_.pooling.value_or(PoolingMode::kCls));
  std::shared_ptr<const SpladeHead> splade;  // read with the checkpoint, attached to the encoder
  if (model->st_config_.splade) {
    if (config.classifier.kind != ModelKind::kEmbedding || !dense.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(model_dir, "/modules.json: SpladePooling with a ",
                       dense.empty() ? config.classifier.architecture : "Dense module",
                       " is not a known layout"));
    }
    ASSIGN_OR_RETURN(SpladeHead head, LoadSpladeHead(*spec, config, *checkpoint));
    splade = std::make_shared<const SpladeHead>(std::move(head));
  }
  if (config.classifier.kind != ModelKind::kEmbedding) {
    if (config.classifier.kind == ModelKind::kReranker && !model->tokenizer_->has_pair_template()) {
      return absl::InvalidArgumentError(
          absl::StrCat(model_dir, "/tokenizer.json: a reranker needs the post-processor's pair "
                                  "template (post_processor.pair), and this tokenizer has none"));
    }
    if (!dense.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          model_dir, ": a ", config.classifier.architecture,
          " checkpoint with sentence-transformers Dense modules is not a known layout"));
    }
    // The head reads the token its family pools (the first, or ModernBERT's choice), whatever
    // sentence-transformers' files say, and is the last layer the vectors pass.
    model->pooling_ = config.classifier.last_token_pooling ? PoolingMode::kLastToken
                      : config.classifier.mean_pooling    ? PoolingMode::kMean
                                                          : PoolingMode::kCls;
    ASSIGN_OR_RETURN(dense, LoadClassifierHead(*spec, config.classifier, config, *checkpoint));
  }
  if (options.encoder.dtype == ComputeDType::kAuto && options.encoder.device.cuda) {
    // On a GPU, auto is bf16: its tensor cores' type, and the default of the servers it is
    // compared with. The CPU's trials time CPU kernels, which a GPU does not run.
    EncoderOptions bf16 = options.encoder;
    bf16.dtype = ComputeDType::kBFloat16;
    ASSIGN_OR_RETURN(model->encoder_, Encoder::Create(config, *spec, *checkpoint, bf16));
  } else if (options.encoder.dtype == ComputeDType::kAuto) {
    ASSIGN_OR_RETURN(DTypeChoice choice, LoadAutoEncoder(config, *spec, *checkpoint, options,
                                                         model->pooling_, *model->tokenizer_));
    model->encoder_ = std::move(choice.encoder);
    model->dtype_trials_ = std::move(choice.trials);
    model->dtype_choice_source_ = std::move(choice.source);
  } else {
    ASSIGN_OR_RETURN(model->encoder_, Encoder::Create(config, *spec, *checkpoint, options.encoder));
  }
  model->weights_layout_ = checkpoint->layout();
  for (const TensorView* view : checkpoint->UnreadTensors())
    model->unread_tensors_.push_back(Describe(*view));
  // bge-m3's heads read the final states in fp32 whatever the dtype, so they join the encoder
  // after the dtype is chosen.
  if (heads.has_sparse() || heads.multi_vector_dim() > 0)  // (a ColBERT projection among them)
    model->encoder_->AttachTokenHeads(std::make_shared<const TokenHeads>(std::move(heads)));
  if (splade != nullptr) model->encoder_->AttachSpladeHead(std::move(splade));
  if (!dense.empty()) {
    model->encoder_->AttachDenseLayers(
        std::make_shared<const std::vector<DenseLayer>>(std::move(dense)));
  }
  if (model->max_content_tokens() < 1) {
    return absl::DataLossError(absl::StrCat(model_dir, ": a window of ", model->window_,
                                            " tokens (", model->window_source_,
                                            ") leaves no room for text after the special tokens"));
  }
  const Encoder& encoder = *model->encoder_;
  if (late.has_value() && late->do_query_expansion && !late->attend_to_expansion_tokens &&
      !encoder.KeyLimitExact(late->query_length)) {
    return absl::InvalidArgumentError(absl::StrCat(
        late->layout, ": attend_to_expansion_tokens false hides a query's expansion from its "
                      "text, which this family's attention (causal, ALiBi, relative or banded "
                      "below query_length) cannot do exactly"));
  }
  ASSIGN_OR_RETURN(model->device_bytes_per_token_, OnForwardThread(options.run_forward, [&] {
                     return encoder.MeasureBytesPerToken(model->window_);
                   }));
  // Same text, same vector, measured on every device and dtype: 0 where the kernels are
  // bit-identical alone and batched (the CPU's), a GPU's bound where they are not.
  ASSIGN_OR_RETURN(const auto probe, GuardProbe(*model->tokenizer_, model->window_));
  ASSIGN_OR_RETURN(model->batch_invariance_bound_, OnForwardThread(options.run_forward, [&] {
                     return MeasureBatchInvariance(
                         [&](const EncodeBatch& batch) { return encoder.Encode(batch); }, probe,
                         model->pooling_);
                   }));
  return model;
}

Model::~Model() {
  // A reload drops the old version while the new one serves: its weights go back to the
  // system now, not whenever the allocator gets round to it.
  encoder_.reset();
  ReturnFreedMemoryToSystem();
}

}  // namespace embedding::model_store
