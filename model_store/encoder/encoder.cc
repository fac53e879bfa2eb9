#include "model_store/encoder/encoder.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/name_table.h"
#include "common/status_macros.h"
#include "model_store/encoder/dense_layers.h"
#include "model_store/encoder/encoder_layers.h"
#include "model_store/encoder/encoder_outputs.h"
#include "model_store/encoder/encoder_weights.h"
#include "model_store/encoder/forward_failure.h"
#include "model_store/encoder/linear_layer.h"
#include "model_store/encoder/rotary.h"
#include "model_store/encoder/segment_layout.h"
#include "model_store/encoder/splade_head.h"
#include "model_store/encoder/token_heads.h"
#include "model_store/kernels/cpu_features.h"
#include "model_store/kernels/torch_compat.h"

namespace embedding::model_store {

struct Encoder::Weights {
  EncoderWeights tensors;
  torch::Device device = torch::kCPU;             // where the tensors lie and the layers run
  std::unique_ptr<RotaryEmbedding> rotary;        // set when positions are rotary
  std::unique_ptr<RotaryEmbedding> local_rotary;  // banded layers' own base (ModernBERT)
};

constexpr NamedValue<ComputeDType> kDTypeNames[] = {{ComputeDType::kFloat32, "fp32"},
                                                    {ComputeDType::kBFloat16, "bf16"},
                                                    {ComputeDType::kFloat16, "fp16"},
                                                    {ComputeDType::kInt8, "int8"},
                                                    {ComputeDType::kAuto, "auto"}};

const char* ComputeDTypeName(ComputeDType dtype) { return NameOf(kDTypeNames, dtype); }

namespace {

// int8 quantises fp32 weights and keeps everything but the linear layers in fp32.
torch::ScalarType WeightType(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kBFloat16:
      return torch::kBFloat16;
    case ComputeDType::kFloat16:
      return torch::kFloat16;
    default:
      return torch::kFloat32;
  }
}

}  // namespace

std::optional<ComputeDType> ComputeDTypeNamed(absl::string_view name) {
  return ValueNamed(kDTypeNames, name);
}

std::string ComputeDTypeNames() { return JoinedNames(kDTypeNames); }

Encoder::Encoder(EncoderConfig config, EncoderOptions options)
    : config_(std::move(config)), options_(options) {}

Encoder::~Encoder() {
  const bool on_device = options_.device.cuda;
  weights_.reset();
  if (on_device) ReleaseCachedDeviceMemory();  // the weights' blocks, back to the device
}

void Encoder::AttachTokenHeads(std::shared_ptr<const TokenHeads> heads) {
  heads_ = std::move(heads);
}

bool Encoder::has_sparse_head() const {
  return splade_ != nullptr || (heads_ != nullptr && heads_->has_sparse());
}

void Encoder::AttachSpladeHead(std::shared_ptr<const SpladeHead> head) {
  splade_ = std::move(head);
}

void Encoder::AttachDenseLayers(std::shared_ptr<const std::vector<DenseLayer>> layers) {
  dense_ = std::move(layers);
}

int64_t Encoder::embedding_dim() const {
  return dense_ == nullptr || dense_->empty() ? config_.hidden_size : dense_->back().weight.size(0);
}

void Encoder::ProjectPooled(std::vector<float>* vector) const {
  if (dense_ == nullptr || dense_->empty()) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor row =
      torch::from_blob(vector->data(), {1, static_cast<int64_t>(vector->size())}, torch::kFloat32);
  const torch::Tensor out = ApplyDenseLayers(*dense_, row);
  vector->assign(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

int64_t Encoder::multi_vector_dim() const {
  return heads_ != nullptr ? heads_->multi_vector_dim() : 0;
}

DeviceMemory Encoder::device_memory() const { return ReadDeviceMemory(options_.device); }

absl::StatusOr<int64_t> Encoder::MeasureBytesPerToken(int64_t tokens) const {
  if (!options_.device.cuda || tokens < 1) return 0;
  // One sequence of `tokens` (attention's cost grows with a sequence's length), then two of
  // half as many (segments attended together take padded copies): the dearer per token.
  int64_t most = 1;
  for (const int64_t sequences : {int64_t{1}, int64_t{2}}) {
    const int64_t length = tokens / sequences;
    if (length < 1) continue;
    EncodeBatch probe;
    probe.pooling = PoolingMode::kMean;
    for (int64_t s = 0; s < sequences; ++s) {
      probe.sequences.emplace_back(length);
      for (int64_t t = 0; t < length; ++t) {  // every id but 0 in turn: no padding rows
        probe.sequences[s][t] = static_cast<int32_t>(1 + t % (config_.vocab_size - 1));
      }
      probe.temperatures.push_back(1.0f);
    }
    const int64_t before = device_memory().allocated_bytes;
    ResetPeakDeviceMemory(options_.device.index);
    RETURN_IF_ERROR(Encode(probe).status());
    SynchronizeDevice(options_.device.index);
    const int64_t grown = device_memory().peak_allocated_bytes - before;
    most = std::max(most, (grown + length * sequences - 1) / (length * sequences));
  }
  return most;
}

absl::StatusOr<std::unique_ptr<Encoder>> Encoder::Create(const EncoderConfig& config,
                                                         const ArchitectureSpec& spec,
                                                         const Checkpoint& checkpoint,
                                                         const EncoderOptions& options) {
  if (options.dtype == ComputeDType::kAuto) {
    return absl::InvalidArgumentError("dtype auto is resolved by Model::Load, not the encoder");
  }
  // A CUDA device runs LibTorch's own ops; the CPU its oneDNN kernels unless asked otherwise.
  const bool torch_ops = options.torch_ops || options.device.cuda;
  if (torch_ops && options.dtype == ComputeDType::kInt8) {
    return absl::FailedPreconditionError(
        absl::StrCat("dtype int8 runs on oneDNN's CPU kernels only; on ",
                     ComputeDeviceName(options.device), " use bf16 or fp32"));
  }
  if (options.dtype == ComputeDType::kFloat16 && !options.device.cuda) {
    return absl::FailedPreconditionError(
        absl::StrCat("dtype fp16 runs on a CUDA device only (LibTorch's CPU kernels have no fp16 "
                     "matrix products); on ",
                     ComputeDeviceName(options.device), " use bf16 or fp32"));
  }
  if (options.dtype == ComputeDType::kBFloat16 && !options.device.cuda && !CpuHasNativeBf16()) {
    return absl::FailedPreconditionError(
        "dtype bf16 needs a CPU with avx512_bf16 or amx_bf16 (this one has neither; bf16 would "
        "be emulated and slower than fp32): use fp32");
  }
  if (options.intra_op_threads > 0) torch::set_num_threads(options.intra_op_threads);
  EncoderOptions resolved = options;
  resolved.torch_ops = torch_ops;
  auto encoder = std::unique_ptr<Encoder>(new Encoder(config, resolved));
  encoder->max_sequence_length_ = config.max_sequence_length();
  if (encoder->max_sequence_length_ < 2) {
    return absl::DataLossError("config.json: the position table leaves no room for tokens");
  }
  const bool bf16 = options.dtype == ComputeDType::kBFloat16;
  // fp32 linear layers through oneDNN, not BLAS: on this CPU (Intel Xeon, avx512) 512 x 768 x
  // 3072 at 2 threads ran at 193 GFLOP/s through oneDNN against 36.5 through Debian's
  // OpenBLAS, conversions included. bf16 already goes through oneDNN.
  const LinearKernel kernel = torch_ops                              ? LinearKernel::kTorchOps
                              : bf16                                 ? LinearKernel::kDefault
                              : options.dtype == ComputeDType::kInt8 ? LinearKernel::kInt8
                                                                     : LinearKernel::kOneDnn;
  const torch::Device device = options.device.cuda
                                   ? torch::Device(torch::kCUDA, options.device.index)
                                   : torch::Device(torch::kCPU);
  try {
    c10::InferenceMode guard;
    ASSIGN_OR_RETURN(auto tensors,
                     BindEncoderWeights(config, spec, checkpoint, WeightType(options.dtype)));
    if (options.device.cuda) {
      KeepFp32Exact();
      MoveEncoderWeights(device, &tensors);
    }
    RETURN_IF_ERROR(PrepareLinearLayers(kernel, config.key_value_heads(), &tensors));
    encoder->weights_ = std::make_unique<Weights>();
    encoder->weights_->device = device;
    encoder->weights_->tensors = std::move(tensors);
    if (config.rotary.dim > 0) {
      encoder->weights_->rotary =
          std::make_unique<RotaryEmbedding>(config.rotary, encoder->max_sequence_length_);
      if (config.local_rotary_base > 0) {
        RotaryConfig local = config.rotary;
        local.base = config.local_rotary_base;
        encoder->weights_->local_rotary =
            std::make_unique<RotaryEmbedding>(local, encoder->max_sequence_length_);
      }
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("binding weights failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {  // oneDNN's own errors (dnnl::error)
    return absl::InternalError(absl::StrCat("binding weights failed: ", e.what()));
  }
  return encoder;
}

bool Encoder::KeyLimitExact(int64_t length) const {
  // SelfAttention attends the rows past the limit in runs of their own against the first keys:
  // exact only where no logit depends on where in the sequence a row or key lies.
  if (config_.causal || !config_.alibi_slopes.empty() || config_.relative_attention_buckets > 0 ||
      config_.logn_scale.enabled) {
    return false;
  }
  for (int64_t band : config_.layer_bands) {
    if (band > 0 && band < length - 1) return false;
  }
  return true;
}

absl::Status Encoder::ValidateAttendedLengths(const EncodeBatch& batch) const {
  if (batch.attended_lengths.empty()) return absl::OkStatus();
  if (batch.attended_lengths.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attended_lengths: ", batch.attended_lengths.size(), " values for ",
                     batch.sequences.size(), " sequences"));
  }
  for (size_t b = 0; b < batch.sequences.size(); ++b) {
    const int64_t attended = batch.attended_lengths[b];
    const auto length = static_cast<int64_t>(batch.sequences[b].size());
    if (attended < 0 || attended > length) {
      return absl::InvalidArgumentError(absl::StrCat("attended_lengths[", b, "]: ", attended,
                                                     " outside [0, ", length, "]"));
    }
    if (attended == 0 || attended == length) continue;
    if (!KeyLimitExact(length)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attended_lengths[", b, "]: a key limit needs attention that no position within the "
          "sequence changes (no causal mask, ALiBi, relative bias, length scale, or band below ",
          length - 1, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Encoder::ValidateBatch(const EncodeBatch& batch) const {
  if (batch.sequences.empty()) return absl::InvalidArgumentError("sequences: batch is empty");
  if (batch.temperatures.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat("temperatures: ", batch.temperatures.size(),
                                                   " values for ", batch.sequences.size(),
                                                   " sequences"));
  }
  if (!batch.local_temperatures.empty() &&
      batch.local_temperatures.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("local_temperatures: ", batch.local_temperatures.size(), " values for ",
                     batch.sequences.size(), " sequences"));
  }
  if (!batch.token_outputs.empty() && batch.token_outputs.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat("token_outputs: ", batch.token_outputs.size(),
                                                   " values for ", batch.sequences.size(),
                                                   " sequences"));
  }
  if (!batch.token_types.empty() && batch.token_types.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat("token_types: ", batch.token_types.size(),
                                                   " values for ", batch.sequences.size(),
                                                   " sequences"));
  }
  // A family without a type table (DistilBERT, MPNet) ignores the types its tokenizer gives a
  // pair, as transformers' models of those families take none.
  const bool typed = weights_->tensors.token_type_embeddings.defined();
  const int64_t types = typed ? weights_->tensors.token_type_embeddings.size(0) : 0;
  for (size_t b = 0; b < batch.token_types.size(); ++b) {
    const auto& seq_types = batch.token_types[b];
    if (!seq_types.empty() && seq_types.size() != batch.sequences[b].size()) {
      return absl::InvalidArgumentError(absl::StrCat("token_types[", b, "]: ", seq_types.size(),
                                                     " types for ", batch.sequences[b].size(),
                                                     " tokens"));
    }
    if (!typed) continue;
    for (int32_t type : seq_types) {
      if (type < 0 || type >= types) {
        return absl::InvalidArgumentError(absl::StrCat("token_types[", b, "]: type ", type,
                                                       " outside [0, ", types, ")"));
      }
    }
  }
  if (!batch.adapters.empty() && batch.adapters.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "adapters: ", batch.adapters.size(), " values for ", batch.sequences.size(), " sequences"));
  }
  const auto adapters = static_cast<int32_t>(config_.adapters.size());
  for (size_t b = 0; b < batch.adapters.size(); ++b) {
    if (batch.adapters[b] < -1 || batch.adapters[b] >= adapters) {
      return absl::InvalidArgumentError(
          absl::StrCat("adapters[", b, "]: ", batch.adapters[b], " outside [-1, ", adapters, ")"));
    }
  }
  if (!batch.prefix_lengths.empty() && batch.prefix_lengths.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat("prefix_lengths: ", batch.prefix_lengths.size(),
                                                   " values for ", batch.sequences.size(),
                                                   " sequences"));
  }
  for (size_t b = 0; b < batch.prefix_lengths.size(); ++b) {
    const int32_t prefix = batch.prefix_lengths[b];
    if (prefix < 0 || prefix >= static_cast<int64_t>(batch.sequences[b].size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prefix_lengths[", b, "]: ", prefix, " outside [0, ", batch.sequences[b].size(), ")"));
    }
  }
  RETURN_IF_ERROR(ValidateAttendedLengths(batch));
  for (size_t b = 0; b < batch.sequences.size(); ++b) {
    const auto& seq = batch.sequences[b];
    if (seq.empty() || static_cast<int64_t>(seq.size()) > max_sequence_length_) {
      return absl::InvalidArgumentError(absl::StrCat("sequences[", b, "]: length ", seq.size(),
                                                     " outside [1, ", max_sequence_length_, "]"));
    }
    for (int32_t id : seq) {
      if (id < 0 || id >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("sequences[", b, "]: token id ", id,
                                                       " outside [0, ", config_.vocab_size, ")"));
      }
    }
    if (b < batch.token_outputs.size()) {
      const TokenOutputs& wants = batch.token_outputs[b];
      if ((wants.sparse && !has_sparse_head()) || (wants.multi_vector && multi_vector_dim() == 0)) {
        return absl::InvalidArgumentError(absl::StrCat("token_outputs[", b, "]: the model has no ",
                                                       wants.sparse ? "sparse" : "multi-vector",
                                                       " head"));
      }
    }
    for (const auto* taus : {&batch.temperatures, &batch.local_temperatures}) {
      if (taus->empty()) continue;
      const float tau = (*taus)[b];
      if (!std::isfinite(tau) || tau <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(taus == &batch.temperatures ? "temperatures[" : "local_temperatures[", b,
                         "]: ", tau, " must be finite and > 0"));
      }
    }
  }
  return absl::OkStatus();
}

void RunForwardPasses(const ForwardRunner& runner, const std::function<void()>& passes) {
  if (runner) {
    runner(passes);
  } else {
    passes();
  }
}

absl::StatusOr<EncodeResult> Encoder::Encode(const EncodeBatch& batch) const {
  RETURN_IF_ERROR(ValidateBatch(batch));
  const int64_t batch_size = static_cast<int64_t>(batch.sequences.size());
  std::vector<int64_t> sequence_offsets(batch_size + 1, 0);
  for (int64_t b = 0; b < batch_size; ++b) {
    sequence_offsets[b + 1] = sequence_offsets[b] + static_cast<int64_t>(batch.sequences[b].size());
  }

  // Packed: the segments' tokens back to back, no padding. Row-wise layers (linear, norm,
  // activation) run on all tokens at once; attention runs per segment, so its cost per token
  // does not grow with the batch (LibTorch 1.13's 4-D batched attention measured 2-11x slower
  // per sequence than a loop) and no padded key needs masking.
  // A prefix's states are its own only under a causal mask, and only where nothing in a layer
  // depends on the whole sequence's length (dynamic NTK's base, GTE's logn scale).
  const bool prefixes_exact =
      config_.causal && config_.rotary.scaling_factor == 0 && !config_.logn_scale.enabled;
  const SegmentLayout layout = LayOutSegments(batch, prefixes_exact);
  const int64_t segments = static_cast<int64_t>(layout.segments.size());
  PackedSequences packed;
  packed.torch_ops = options_.torch_ops;
  packed.offsets.assign(segments + 1, 0);
  for (int64_t s = 0; s < segments; ++s) {
    const Segment& segment = layout.segments[s];
    packed.offsets[s + 1] = packed.offsets[s] + segment.end - segment.begin;
    packed.temperatures.push_back(batch.temperatures[segment.sequence]);
    packed.local_temperatures.push_back(batch.local_temperatures.empty()
                                            ? batch.temperatures[segment.sequence]
                                            : batch.local_temperatures[segment.sequence]);
    if (!batch.attended_lengths.empty()) {  // no prefix is shared: the segment is its sequence
      packed.attended.push_back(batch.attended_lengths[segment.sequence] > 0
                                    ? batch.attended_lengths[segment.sequence]
                                    : segment.end - segment.begin);
    }
    if (!layout.token_rows.empty()) {
      packed.prefix_of.push_back(segment.prefix);
      packed.is_prefix.push_back(segment.is_prefix);
    }
  }
  // Row-wise layers see the token count rounded up to a bucket (the extra rows are id 0 at
  // the first position, never attended to, and dropped at the end): oneDNN builds and caches a
  // kernel per shape, and a bounded cache (see server/app/server.cc) keeps hitting only when shapes
  // repeat.
  packed.rows = BucketedRows(packed.offsets.back());
  // Absolute positions count from the config's offset along the whole sequence, whichever
  // segment computes a token; after-padding positions (XLM-R) give a padding id the padding
  // row and do not count it, as Hugging Face computes them.
  const bool skip_padding = config_.positions == PositionKind::kAbsoluteAfterPadding;
  std::vector<int64_t> id_data(packed.rows, 0);
  std::vector<int64_t> position_data(packed.rows, config_.position_offset);
  bool any_type = false;  // only a model with a type table reads them (ValidateBatch)
  if (weights_->tensors.token_type_embeddings.defined()) {
    for (const auto& seq_types : batch.token_types) {
      for (int32_t type : seq_types) any_type |= type != 0;
    }
  }
  std::vector<int64_t> type_data(any_type ? packed.rows : 0, 0);
  bool any_adapter = false;
  for (int32_t adapter : batch.adapters) any_adapter |= adapter >= 0;
  std::vector<int64_t> adapter_data(any_adapter ? packed.rows : 0, -1);
  for (int64_t s = 0; s < segments; ++s) {
    const Segment& segment = layout.segments[s];
    const auto& seq = batch.sequences[segment.sequence];
    int64_t position = config_.position_offset;
    for (int64_t t = 0; t < segment.end; ++t) {
      const bool padding = skip_padding && seq[t] == config_.pad_token_id;
      const int64_t token_position = padding ? config_.pad_token_id : position++;
      if (t < segment.begin) continue;
      const int64_t row = packed.offsets[s] + t - segment.begin;
      id_data[row] = seq[t];
      position_data[row] = token_position;
      if (any_type && !batch.token_types[segment.sequence].empty()) {
        type_data[row] = batch.token_types[segment.sequence][t];
      }
      if (any_adapter) adapter_data[row] = batch.adapters[segment.sequence];
    }
  }

  try {
    c10::InferenceMode guard;
    const EncoderWeights& w = weights_->tensors;
    const torch::Device& device = weights_->device;
    const RotaryEmbedding* rotary = weights_->rotary.get();
    const RotaryEmbedding* local_rotary = weights_->local_rotary.get();
    // A segment's angles are its positions' within the whole sequence (whose length decides
    // the NTK base).
    auto angles = [&](const RotaryEmbedding& table, int64_t s) {
      const int64_t before = packed.keys_before(s);
      RotaryEmbedding::Angles all = table.For(before + packed.offsets[s + 1] - packed.offsets[s]);
      return RotaryEmbedding::Angles{all.cos.slice(0, before).to(device),
                                     all.sin.slice(0, before).to(device)};
    };
    for (int64_t s = 0; s < segments; ++s) {
      if (rotary != nullptr) packed.angles.push_back(angles(*rotary, s));
      if (local_rotary != nullptr) packed.local_angles.push_back(angles(*local_rotary, s));
    }
    // Host rows, copied to the device where it is not the CPU (there, views of the vectors).
    const auto rows = [&](std::vector<int64_t>& data) {
      return torch::from_blob(data.data(), {packed.rows}, torch::kInt64).to(device);
    };
    const torch::Tensor ids = rows(id_data);
    const torch::Tensor positions = rows(position_data);
    const torch::Tensor types = any_type ? rows(type_data) : torch::Tensor();
    if (any_adapter) {
      // The filler rows (never read) take the last sequence's adapter, so a batch of one task
      // runs every adapter term on all rows at once.
      std::fill(adapter_data.begin() + packed.offsets.back(), adapter_data.end(),
                batch.adapters.back());
      packed.row_adapters = rows(adapter_data);
    }
    torch::Tensor x = Embeddings(w, ids, positions, types, packed.row_adapters, config_);
    for (size_t i = 0; i < w.layers.size(); ++i) {
      LayerAttention attention{0, &packed.temperatures, rotary, &packed.angles, &w.relative_bias};
      if (!config_.layer_bands.empty() && config_.layer_bands[i] > 0) {
        attention.band = config_.layer_bands[i];
        attention.temperatures = &packed.local_temperatures;
        if (local_rotary != nullptr) {
          attention.rotary = local_rotary;
          attention.angles = &packed.local_angles;
        }
      }
      x = TransformerLayer(std::move(x), w.layers[i], packed, config_, attention);
      if (batch.between_layers) batch.between_layers();
    }
    x = Norm(x, w.final_norm, config_.layer_norm_eps);
    if (!layout.token_rows.empty()) {  // each sequence's tokens back in its own rows
      x = x.index_select(0, torch::tensor(layout.token_rows, torch::kInt64).to(device));
    }
    // Pooling, the heads and the statistics run on the CPU, on the final states alone.
    if (!x.is_cpu()) x = x.to(torch::kCPU);
    return PoolAndMeasure(x, sequence_offsets, batch, heads_.get(), splade_.get(), dense_.get());
  } catch (const std::exception& e) {  // c10::Error, oneDNN's dnnl::error, std::bad_alloc
    return ForwardFailure("encoder forward failed", e);
  }
}

}  // namespace embedding::model_store
