#include "model_store/encoder.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/attention.h"
#include "model_store/cpu_features.h"
#include "model_store/encoder_weights.h"
#include "model_store/linear_layer.h"

namespace embedding::model_store {

struct Encoder::Weights {
  EncoderWeights tensors;
};

namespace {

// In fp32 (see NormWeights), back in x's dtype.
torch::Tensor Norm(const torch::Tensor& x, const NormWeights& w, double eps) {
  return torch::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, w.weight, w.bias, eps)
      .to(x.scalar_type());
}

torch::Tensor Activate(const torch::Tensor& x, Activation act) {
  switch (act) {
    case Activation::kGeluErf:
      return torch::gelu(x);
    case Activation::kGeluTanh:
      return torch::gelu(x, "tanh");
    case Activation::kRelu:
      return torch::relu(x);
  }
  return x;
}

// 64: at most 63 idle rows, under 3% of a 2,048-token batch, while a mixed corpus's batches
// fall into 32 shapes up to 2,048 tokens instead of hundreds.
constexpr int64_t kRowBucket = 64;

// Rows per feed-forward block. Its [rows, intermediate] activations are a forward's largest
// tensors (25 MB each at 2,048 x 3,072 fp32, several alive at once); in blocks they are bounded
// by the block, not the batch. A 2,040-token document grew an idle BERT-base server by 175 MiB
// in one forward before. A multiple of kRowBucket, so block shapes repeat.
constexpr int64_t kFeedForwardRows = 512;

torch::Tensor FeedForward(const torch::Tensor& x, const LayerWeights& layer, Activation act) {
  const int64_t rows = x.size(0);
  auto block = [&](const torch::Tensor& in) {
    return ApplyLinear(Activate(ApplyLinear(in, layer.intermediate), act), layer.output);
  };
  if (rows <= kFeedForwardRows) return block(x);
  torch::Tensor out = torch::empty_like(x);
  for (int64_t begin = 0; begin < rows; begin += kFeedForwardRows) {
    const int64_t end = std::min(rows, begin + kFeedForwardRows);
    out.slice(0, begin, end).copy_(block(x.slice(0, begin, end)));
  }
  return out;
}

// Queries per attention block for a sequence of `length` tokens: the whole sequence up to
// 512 tokens, then fewer, down to 128, so scores never exceed heads x max(512 x 512,
// 128 x L) values (50 MB at 12 heads and 8,192 tokens in fp32, against 3.2 GB for full
// scores). Measured on [12 heads, L, 64] in python3-torch, 2 threads: at L = 512 one block
// took 7.1 ms in bf16 against 9.8 ms in blocks of 128 (fp32: 26.2 against 26.5); at L = 4,096
// blocks of 128 took 477 ms in bf16 against 657 ms for one block.
int64_t QueryBlock(int64_t length) {
  constexpr int64_t kScoresPerHead = 512 * 512;
  constexpr int64_t kMinBlock = 128;
  return std::max(kMinBlock, std::min(length, kScoresPerHead / length));
}

}  // namespace

const char* ComputeDTypeName(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kFloat32:
      return "fp32";
    case ComputeDType::kBFloat16:
      return "bf16";
    case ComputeDType::kInt8:
      return "int8";
    case ComputeDType::kAuto:
      return "auto";
  }
  return "?";
}

Encoder::Encoder(EncoderConfig config, EncoderOptions options)
    : config_(std::move(config)), options_(options) {}

Encoder::~Encoder() = default;

absl::StatusOr<std::unique_ptr<Encoder>> Encoder::Create(const EncoderConfig& config,
                                                         const ArchitectureSpec& spec,
                                                         const Checkpoint& checkpoint,
                                                         const EncoderOptions& options) {
  if (options.dtype == ComputeDType::kAuto) {
    return absl::InvalidArgumentError("dtype auto is resolved by Model::Load, not the encoder");
  }
  if (options.dtype == ComputeDType::kBFloat16 && !CpuHasNativeBf16()) {
    return absl::FailedPreconditionError(
        "dtype bf16 needs a CPU with avx512_bf16 or amx_bf16 (this one has neither; bf16 would "
        "be emulated and slower than fp32): use fp32");
  }
  if (options.intra_op_threads > 0) torch::set_num_threads(options.intra_op_threads);
  auto encoder = std::unique_ptr<Encoder>(new Encoder(config, options));
  encoder->max_sequence_length_ = config.max_position_embeddings;
  if (encoder->max_sequence_length_ < 2) {
    return absl::DataLossError("config.json: max_position_embeddings leaves no room for tokens");
  }
  // int8 quantises fp32 weights and keeps everything but the linear layers in fp32.
  const bool bf16 = options.dtype == ComputeDType::kBFloat16;
  // fp32 linear layers through oneDNN, not BLAS: on this CPU (Intel Xeon, avx512) 512 x 768 x
  // 3072 at 2 threads ran at 193 GFLOP/s through oneDNN against 36.5 through Debian's
  // OpenBLAS, conversions included. bf16 already goes through oneDNN.
  const LinearKernel kernel = bf16 ? LinearKernel::kDefault
                              : options.dtype == ComputeDType::kInt8 ? LinearKernel::kInt8
                                                                     : LinearKernel::kOneDnn;
  try {
    c10::InferenceMode guard;
    ASSIGN_OR_RETURN(auto tensors, BindEncoderWeights(config, spec, checkpoint,
                                                      bf16 ? torch::kBFloat16 : torch::kFloat32));
    RETURN_IF_ERROR(PrepareLinearLayers(kernel, &tensors));
    encoder->weights_ = std::make_unique<Weights>(Weights{std::move(tensors)});
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("binding weights failed: ", e.what_without_backtrace()));
  }
  return encoder;
}

absl::Status Encoder::ValidateBatch(const EncodeBatch& batch) const {
  if (batch.sequences.empty()) return absl::InvalidArgumentError("sequences: batch is empty");
  if (batch.temperatures.size() != batch.sequences.size()) {
    return absl::InvalidArgumentError(absl::StrCat("temperatures: ", batch.temperatures.size(),
                                                   " values for ", batch.sequences.size(),
                                                   " sequences"));
  }
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
    const float tau = batch.temperatures[b];
    if (!std::isfinite(tau) || tau <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("temperatures[", b, "]: ", tau, " must be finite and > 0"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EncodeResult> Encoder::Encode(const EncodeBatch& batch) const {
  RETURN_IF_ERROR(ValidateBatch(batch));
  const int64_t batch_size = static_cast<int64_t>(batch.sequences.size());

  // Packed: the sequences' tokens back to back, no padding. Row-wise layers (linear, norm,
  // activation) run on all tokens at once; attention runs per sequence, so its cost per token
  // does not grow with the batch (LibTorch 1.13's 4-D batched attention measured 2-11x slower
  // per sequence than a loop) and no padded key needs masking.
  std::vector<int64_t> offsets(batch_size + 1, 0);
  for (int64_t b = 0; b < batch_size; ++b)
    offsets[b + 1] = offsets[b] + static_cast<int64_t>(batch.sequences[b].size());
  const int64_t total = offsets.back();
  // Row-wise layers see the token count rounded up to kRowBucket (the extra rows are id 0 at
  // position 0, never attended to, and dropped at the end): oneDNN builds and caches a kernel
  // per shape, and a bounded cache (see server/main.cc) keeps hitting only when shapes repeat.
  const int64_t rows = (total + kRowBucket - 1) / kRowBucket * kRowBucket;
  std::vector<int64_t> id_data(rows, 0), position_data(rows, 0);
  for (int64_t b = 0; b < batch_size; ++b) {
    const auto& seq = batch.sequences[b];
    for (size_t t = 0; t < seq.size(); ++t) {
      id_data[offsets[b] + t] = seq[t];
      position_data[offsets[b] + t] = static_cast<int64_t>(t);
    }
  }

  try {
    c10::InferenceMode guard;
    const EncoderWeights& w = weights_->tensors;
    torch::Tensor ids = torch::from_blob(id_data.data(), {rows}, torch::kInt64);
    torch::Tensor positions = torch::from_blob(position_data.data(), {rows}, torch::kInt64);

    // Embeddings: word + position + token type (single-segment input: type 0). [T, H]
    torch::Tensor x = w.word_embeddings.index_select(0, ids) +
                      w.position_embeddings.index_select(0, positions) + w.token_type_embeddings[0];
    x = Norm(x, w.embeddings_norm, config_.layer_norm_eps);

    // TempScale: dividing sequence b's logits by tau_b is scaling its queries by 1/tau_b.
    const double base_scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
    const int64_t heads = config_.num_attention_heads;
    const int64_t head_dim = config_.head_dim();
    for (const LayerWeights& layer : w.layers) {
      // int8 keeps attention in fp32: with bf16 attention (7.6 ms against 11.9 ms per
      // [12 heads, 512, 64]) its pooled cosine to fp32 fell to 0.984 on real text at tau 0.5
      // (0.9995 with fp32 attention), though bf16 linear layers with the same attention hold
      // 0.99997.
      torch::Tensor qkv = ApplyLinear(x, layer.qkv).view({rows, 3, heads, head_dim});
      torch::Tensor context = torch::zeros({rows, heads * head_dim}, qkv.options());
      for (int64_t b = 0; b < batch_size; ++b) {
        const int64_t length = offsets[b + 1] - offsets[b];
        torch::Tensor seq = qkv.slice(0, offsets[b], offsets[b + 1]).permute({1, 2, 0, 3});
        torch::Tensor attended = BlockedSelfAttention(
            seq[0].contiguous(), seq[1].contiguous(), seq[2].contiguous(),
            base_scale / batch.temperatures[b], QueryBlock(length));  // [heads, L, d]
        context.slice(0, offsets[b], offsets[b + 1])
            .copy_(attended.transpose(0, 1).reshape({length, heads * head_dim}));
      }
      x = Norm(ApplyLinear(context, layer.attention_output) + x, layer.attention_norm,
               config_.layer_norm_eps);
      x = Norm(FeedForward(x, layer, config_.hidden_act) + x, layer.output_norm,
               config_.layer_norm_eps);
    }

    // Pooling and statistics in fp32 whatever the compute dtype.
    x = x.slice(0, 0, total).to(torch::kFloat32).contiguous();
    std::vector<torch::Tensor> pooled_rows, hf_rows;
    for (int64_t b = 0; b < batch_size; ++b) {
      torch::Tensor seq = x.slice(0, offsets[b], offsets[b + 1]);  // [L, H]
      torch::Tensor mean = seq.mean(0);
      switch (batch.pooling) {
        case PoolingMode::kCls:
          pooled_rows.push_back(seq[0]);
          break;
        case PoolingMode::kMean:
          pooled_rows.push_back(mean);
          break;
        case PoolingMode::kMax:
          pooled_rows.push_back(seq.amax(0));
          break;
      }
      hf_rows.push_back((seq - mean).norm() / seq.norm());
    }
    torch::Tensor pooled = torch::stack(pooled_rows);
    if (batch.normalize) {
      pooled = torch::nn::functional::normalize(
          pooled, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1).eps(1e-12));
    }
    pooled = pooled.contiguous();
    torch::Tensor hf_ratio = torch::stack(hf_rows).contiguous();

    EncodeResult result;
    result.dim = config_.hidden_size;
    const float* pooled_data = pooled.data_ptr<float>();
    const float* hf_data = hf_ratio.data_ptr<float>();
    for (int64_t b = 0; b < batch_size; ++b) {
      result.pooled.emplace_back(pooled_data + b * result.dim, pooled_data + (b + 1) * result.dim);
      result.high_frequency_ratio.push_back(hf_data[b]);
    }
    if (batch.return_hidden_states) {
      const float* rows = x.data_ptr<float>();
      for (int64_t b = 0; b < batch_size; ++b) {
        result.hidden_states.emplace_back(rows + offsets[b] * result.dim,
                                          rows + offsets[b + 1] * result.dim);
      }
    }
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("encoder forward failed: ", e.what_without_backtrace()));
  }
}

}  // namespace embedding::model_store
