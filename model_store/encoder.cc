#include "model_store/encoder.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/cpu_features.h"
#include "model_store/encoder_weights.h"

namespace embedding::model_store {

struct Encoder::Weights {
  EncoderWeights tensors;
};

namespace {

torch::Tensor Linear(const torch::Tensor& x, const LinearWeights& w) {
  return torch::nn::functional::linear(x, w.weight, w.bias);
}

torch::Tensor Norm(const torch::Tensor& x, const NormWeights& w, double eps) {
  return torch::layer_norm(x, {x.size(-1)}, w.weight, w.bias, eps);
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

// Splits [B, L, H] into heads: [B, heads, L, head_dim].
torch::Tensor SplitHeads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

}  // namespace

const char* ComputeDTypeName(ComputeDType dtype) {
  return dtype == ComputeDType::kBFloat16 ? "bf16" : "fp32";
}

Encoder::Encoder(EncoderConfig config, EncoderOptions options)
    : config_(std::move(config)), options_(options) {}

Encoder::~Encoder() = default;

absl::StatusOr<std::unique_ptr<Encoder>> Encoder::Create(const EncoderConfig& config,
                                                         const ArchitectureSpec& spec,
                                                         const Checkpoint& checkpoint,
                                                         const EncoderOptions& options) {
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
  const auto dtype = options.dtype == ComputeDType::kBFloat16 ? torch::kBFloat16 : torch::kFloat32;
  try {
    c10::InferenceMode guard;
    ASSIGN_OR_RETURN(auto tensors, BindEncoderWeights(config, spec, checkpoint, dtype));
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
  int64_t max_len = 0;
  for (const auto& seq : batch.sequences) max_len = std::max<int64_t>(max_len, seq.size());

  try {
    c10::InferenceMode guard;
    const EncoderWeights& w = weights_->tensors;
    const auto compute = w.word_embeddings.scalar_type();

    // Build the padded inputs on the host, then hand torch one buffer each.
    std::vector<int64_t> id_data(batch_size * max_len, config_.pad_token_id);
    std::vector<uint8_t> valid_data(batch_size * max_len, 0);
    for (int64_t b = 0; b < batch_size; ++b) {
      const auto& seq = batch.sequences[b];
      for (size_t t = 0; t < seq.size(); ++t) {
        id_data[b * max_len + t] = seq[t];
        valid_data[b * max_len + t] = 1;
      }
    }
    torch::Tensor ids = torch::from_blob(id_data.data(), {batch_size, max_len}, torch::kInt64);
    torch::Tensor valid =
        torch::from_blob(valid_data.data(), {batch_size, max_len}, torch::kUInt8).to(torch::kBool);

    // Embeddings: word + position + token type (single-segment input: type 0).
    torch::Tensor positions = torch::arange(max_len, torch::kInt64);
    torch::Tensor x =
        w.word_embeddings.index_select(0, ids.view({-1})).view({batch_size, max_len, -1});
    x = x + w.position_embeddings.index_select(0, positions).unsqueeze(0) +
        w.token_type_embeddings[0];
    x = Norm(x, w.embeddings_norm, config_.layer_norm_eps);

    // Dividing the logits by tau_b is the same as scaling row b's queries by 1/tau_b; the
    // queries are [L x d] where the logits are [L x L], so scale those. A uniform batch takes a
    // scalar, which keeps tau = 1 bit-identical to the unmodified computation.
    const double base_scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
    bool uniform = true;
    for (float tau : batch.temperatures) uniform = uniform && tau == batch.temperatures[0];
    torch::Tensor row_scale;
    if (!uniform) {
      std::vector<double> scales;
      for (float tau : batch.temperatures) scales.push_back(base_scale / tau);
      row_scale =
          torch::from_blob(scales.data(), {batch_size, 1, 1, 1}, torch::kFloat64).to(compute);
    }
    const double uniform_scale = base_scale / batch.temperatures[0];
    // -inf on padded keys: exp gives exactly 0 for them, whatever tau. Unneeded (and skipped)
    // when every sequence has the same length.
    bool padded = false;
    for (const auto& seq : batch.sequences)
      padded = padded || static_cast<int64_t>(seq.size()) != max_len;
    torch::Tensor key_bias;
    if (padded) {
      key_bias = torch::zeros({batch_size, 1, 1, max_len}, compute)
                     .masked_fill(valid.logical_not().view({batch_size, 1, 1, max_len}),
                                  -std::numeric_limits<float>::infinity());
    }

    const int64_t heads = config_.num_attention_heads;
    for (const LayerWeights& layer : w.layers) {
      std::vector<torch::Tensor> qkv = Linear(x, layer.qkv).chunk(3, -1);
      torch::Tensor q = SplitHeads(qkv[0], heads);
      q = uniform ? q * uniform_scale : q * row_scale;
      torch::Tensor k = SplitHeads(qkv[1], heads);
      torch::Tensor v = SplitHeads(qkv[2], heads);
      torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2));
      if (padded) scores = scores + key_bias;
      torch::Tensor probs = torch::softmax(scores, -1);
      torch::Tensor context =
          torch::matmul(probs, v).transpose(1, 2).reshape({batch_size, max_len, -1});
      x = Norm(Linear(context, layer.attention_output) + x, layer.attention_norm,
               config_.layer_norm_eps);
      torch::Tensor hidden = Activate(Linear(x, layer.intermediate), config_.hidden_act);
      x = Norm(Linear(hidden, layer.output) + x, layer.output_norm, config_.layer_norm_eps);
    }

    // Pooling and statistics in fp32 whatever the compute dtype.
    x = x.to(torch::kFloat32);
    torch::Tensor mask = valid.unsqueeze(-1).to(torch::kFloat32);  // [B, L, 1]
    torch::Tensor counts = mask.sum(1);                            // [B, 1]
    torch::Tensor masked = x * mask;
    torch::Tensor mean = masked.sum(1) / counts;  // [B, H]
    torch::Tensor pooled;
    switch (batch.pooling) {
      case PoolingMode::kCls:
        pooled = x.select(1, 0);
        break;
      case PoolingMode::kMean:
        pooled = mean;
        break;
      case PoolingMode::kMax:
        pooled = x.masked_fill(mask == 0, -std::numeric_limits<float>::infinity()).amax(1);
        break;
    }
    if (batch.normalize) {
      pooled = torch::nn::functional::normalize(
          pooled, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1).eps(1e-12));
    }
    torch::Tensor centered = (x - mean.unsqueeze(1)) * mask;
    torch::Tensor hf_ratio = centered.flatten(1).norm(2, 1) / masked.flatten(1).norm(2, 1);
    pooled = pooled.contiguous();
    hf_ratio = hf_ratio.contiguous();

    EncodeResult result;
    result.dim = config_.hidden_size;
    const float* pooled_data = pooled.data_ptr<float>();
    const float* hf_data = hf_ratio.data_ptr<float>();
    for (int64_t b = 0; b < batch_size; ++b) {
      result.pooled.emplace_back(pooled_data + b * result.dim, pooled_data + (b + 1) * result.dim);
      result.high_frequency_ratio.push_back(hf_data[b]);
    }
    if (batch.return_hidden_states) {
      x = x.contiguous();
      for (int64_t b = 0; b < batch_size; ++b) {
        const int64_t n = static_cast<int64_t>(batch.sequences[b].size());
        const float* row = x[b].data_ptr<float>();
        result.hidden_states.emplace_back(row, row + n * result.dim);
      }
    }
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("encoder forward failed: ", e.what_without_backtrace()));
  }
}

}  // namespace embedding::model_store
