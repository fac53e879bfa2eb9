// The generic transformer encoder on LibTorch, with a TempScale temperature per sequence:
// every self-attention layer computes softmax((QK^T/sqrt(d_head) + M) / tau_b), M the layer's
// causal or banded mask where the spec gives it one. Sequences run packed, so no padding is
// ever masked.
// This header exposes no torch types; the server sees only these plain structs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/pooling.h"
#include "model_store/kernels/compute_device.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

// kInt8: dynamic int8 linear layers, everything else fp32. kFloat16: a CUDA device only
// (LibTorch's CPU kernels have none). kAuto: the fastest dtype that passes its accuracy guard
// on this CPU, or bf16 on a GPU, which Model::Load picks (see dtype_choice.h).
enum class ComputeDType { kFloat32, kBFloat16, kInt8, kAuto, kFloat16 };

// "fp32", "bf16", "fp16", "int8", "auto".
const char* ComputeDTypeName(ComputeDType dtype);
// The dtype spelled `name`, or nullopt.
std::optional<ComputeDType> ComputeDTypeNamed(absl::string_view name);
// "fp32, bf16, fp16, int8, auto": what a refusal of an unknown name lists.
std::string ComputeDTypeNames();

struct EncoderOptions {
  ComputeDType dtype = ComputeDType::kFloat32;
  // torch intra-op threads; 0 leaves torch's setting alone.
  int intra_op_threads = 0;
  ComputeDevice device;  // resolved by ResolveComputeDevice
  // Every layer through LibTorch's own ops (torch::linear, TorchOpsSelfAttention in
  // attention.h) instead of the CPU's oneDNN kernels: the path a CUDA device always takes. On
  // the CPU it is slower, and only the suite asks for it, to check the code a GPU runs against
  // the references. Not with int8, a oneDNN kernel.
  bool torch_ops = false;
};

// Per-token outputs a sequence asks for, from bge-m3's heads (token_heads.h).
struct TokenOutputs {
  bool sparse = false;        // a lexical weight per token
  bool multi_vector = false;  // an L2-normalised vector per token
};

// A sparse vector over the vocabulary: ids ascending, each weight > 0.
struct SparseVector {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

struct TokenHeads;  // token_heads.h: internal to model_store
struct SpladeHead;  // splade_head.h: internal to model_store
struct DenseLayer;  // dense_layers.h: internal to model_store

struct EncodeBatch {
  // Token ids of each sequence, special tokens included. Lengths may differ.
  std::vector<std::vector<int32_t>> sequences;
  // One temperature per sequence, finite and > 0; 1 leaves the model unchanged.
  std::vector<float> temperatures;
  PoolingMode pooling = PoolingMode::kCls;
  // L2-normalise the pooled vectors.
  bool normalize = true;
  // Also return each sequence's final hidden states (late chunking needs them).
  bool return_hidden_states = false;
  // Per sequence; empty asks none. A sequence may ask only for what the heads offer.
  std::vector<TokenOutputs> token_outputs;
  // Token types per sequence (a cross-encoder's pair: 0 for the query, 1 for the document
  // where the tokenizer says so); empty, or an empty entry: type 0 throughout.
  std::vector<std::vector<int32_t>> token_types;
  // The temperature of each sequence's banded (local) attention layers; empty: `temperatures`.
  // AUTO sets it from the schedule at the keys a banded row sees (a row never sees more).
  std::vector<float> local_temperatures;
  // Per sequence, how many of its first tokens it may share with the batch's other sequences
  // (a reranker's query part, the same for each of its documents); empty, or 0: none, and
  // below the sequence's length. A causal model computes each distinct prefix (its ids, types
  // and temperatures) once and attends each sequence's rest to the prefix's keys and values,
  // which are exact for every continuation, as no prefix token sees past itself. A sequence
  // given a prefix is always computed so, shared or not, so it stays its own in any batch. A
  // bidirectional model computes every sequence whole, as does one whose attention depends on
  // the sequence's length (dynamic NTK, a logn scale).
  std::vector<int32_t> prefix_lengths;
  // Per sequence, the task adapter it runs with (an index into EncoderConfig::adapters), or -1
  // for the base weights; empty: -1 throughout.
  std::vector<int32_t> adapters;
  // Per sequence, how many of its first tokens the attention reads as keys: the rest are read
  // by no row, their own included (a ColBERT query's [MASK] expansion, which reads the text and
  // is read by nothing). Empty, or 0: every key. Only where attention does not depend on
  // positions within the sequence (no causal mask, ALiBi, relative bias, or a band it exceeds).
  std::vector<int32_t> attended_lengths;
  // Called after each layer on the thread running the pass, unless empty: a yield point, where
  // a pass that may wait (a Batch API job's) lets waiting passes run on the same thread before
  // its next layer. They must not read this batch; its states stay as they were.
  std::function<void()> between_layers;
};

// Runs `passes` (calls to Encoder::Encode) on the thread that serves a model's forward
// passes and returns once they have; empty: on the calling thread. LibTorch's bf16 kernels
// take oneDNN primitives whose library-managed scratchpad is per thread and reference-counted
// on the thread that builds or frees it: a primitive built on a loading thread and evicted
// from oneDNN's cache on the serving thread freed the serving thread's scratch under its
// other primitives, and vectors drifted (docs/operating.md, "bf16 and the thread that
// encodes"). Every pass on one thread keeps each primitive's count on its own thread.
using ForwardRunner = std::function<void(const std::function<void()>& passes)>;
void RunForwardPasses(const ForwardRunner& runner, const std::function<void()>& passes);
// The same for passes that return a value (a StatusOr), handed back to the caller.
template <typename Passes>
auto OnForwardThread(const ForwardRunner& runner, Passes passes) -> decltype(passes()) {
  std::optional<decltype(passes())> result;
  RunForwardPasses(runner, [&] { result.emplace(passes()); });
  return *std::move(result);
}

struct EncodeResult {
  int64_t dim = 0;
  // Pooled vector per sequence, L2-normalised when the batch asked for it.
  std::vector<std::vector<float>> pooled;
  // Per sequence, row-major [tokens x dim]; empty unless requested.
  std::vector<std::vector<float>> hidden_states;
  // Per sequence, ||X - 1 mean(X)||_F / ||X||_F over its tokens: low means collapsed.
  std::vector<float> high_frequency_ratio;
  // Per sequence that asked, one ReLU(w . h_t + b) per token (special tokens included); empty
  // otherwise.
  std::vector<std::vector<float>> token_weights;
  // Per sequence that asked, row-major [tokens x multi_vector_dim], each row L2-normalised
  // (special tokens included); empty otherwise.
  std::vector<std::vector<float>> token_vectors;
  // Per sequence that asked for sparse output from a SPLADE model: its vector over the
  // vocabulary (splade_head.h); empty otherwise.
  std::vector<SparseVector> vocabulary_sparse;
};

class Encoder {
 public:
  // Binds the checkpoint's weights to `spec`'s names (with or without its prefix), checks
  // every shape against `config`, and converts them to the compute dtype. Errors name the
  // tensor: DATA_LOSS (missing/mis-shaped), FAILED_PRECONDITION (bf16 on a CPU without it, int8
  // without oneDNN), INVALID_ARGUMENT for kAuto.
  static absl::StatusOr<std::unique_ptr<Encoder>> Create(const EncoderConfig& config,
                                                         const ArchitectureSpec& spec,
                                                         const Checkpoint& checkpoint,
                                                         const EncoderOptions& options);
  ~Encoder();

  // Runs one forward pass over the batch's sequences, packed back to back. Thread-safe.
  // INVALID_ARGUMENT for an empty batch, a sequence longer than max_positions, an id outside the
  // vocabulary or a bad temperature; INTERNAL if torch fails.
  absl::StatusOr<EncodeResult> Encode(const EncodeBatch& batch) const;

  // bge-m3's token heads, applied to the final hidden states when a sequence asks. Model::Load
  // attaches them before the encoder is shared; never after an Encode.
  void AttachTokenHeads(std::shared_ptr<const TokenHeads> heads);
  bool has_sparse_head() const;
  // SPLADE's masked-LM head: sparse output is then one vector over the vocabulary per
  // sequence (EncodeResult::vocabulary_sparse), and the model has no dense output. Attached
  // like the token heads.
  void AttachSpladeHead(std::shared_ptr<const SpladeHead> head);
  bool has_splade_head() const { return splade_ != nullptr; }
  // Width of the multi-vectors; 0 without the head.
  int64_t multi_vector_dim() const;

  // sentence-transformers' Dense modules, applied to every pooled vector Encode returns.
  // Attached like the token heads: before the encoder is shared.
  void AttachDenseLayers(std::shared_ptr<const std::vector<DenseLayer>> layers);
  // The width of the vectors Encode pools: the last Dense module's, else hidden_size.
  int64_t embedding_dim() const;
  // Runs `vector` (hidden_size values, pooled by the caller from hidden states, as late
  // chunking does) through the Dense modules in place; nothing without them. Thread-safe.
  void ProjectPooled(std::vector<float>* vector) const;

  const EncoderConfig& config() const { return config_; }
  ComputeDType dtype() const { return options_.dtype; }
  const ComputeDevice& device() const { return options_.device; }
  // Whether every layer runs LibTorch's own ops (EncoderOptions::torch_ops; always on CUDA).
  bool torch_ops() const { return options_.torch_ops; }
  // The device's memory now (all zero on the CPU).
  DeviceMemory device_memory() const;
  // On a GPU: the most a forward pass allocates there beyond what was allocated before it, per
  // token, over one sequence of `tokens` tokens and over two of half that (it runs both passes,
  // which also warm the device up); 0 on the CPU, without running anything. Errors as Encode's.
  absl::StatusOr<int64_t> MeasureBytesPerToken(int64_t tokens) const;
  // Longest sequence the position table allows, special tokens included.
  int64_t max_sequence_length() const { return max_sequence_length_; }
  // Whether a sequence of `length` tokens may limit the keys its rows attend
  // (EncodeBatch::attended_lengths): where no logit depends on positions within it (no causal
  // mask, ALiBi, relative bias or length scale, and every band spans it).
  bool KeyLimitExact(int64_t length) const;

 private:
  struct Weights;
  Encoder(EncoderConfig config, EncoderOptions options);

  absl::Status ValidateBatch(const EncodeBatch& batch) const;
  absl::Status ValidateAttendedLengths(const EncodeBatch& batch) const;

  EncoderConfig config_;
  EncoderOptions options_;
  int64_t max_sequence_length_ = 0;
  std::unique_ptr<Weights> weights_;
  std::shared_ptr<const TokenHeads> heads_;
  std::shared_ptr<const SpladeHead> splade_;
  std::shared_ptr<const std::vector<DenseLayer>> dense_;
};

}  // namespace embedding::model_store
