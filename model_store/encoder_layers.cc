#include "model_store/encoder_layers.h"

#include <algorithm>
#include <cmath>

#include "model_store/attention.h"
#include "model_store/linear_layer.h"

namespace embedding::model_store {
namespace {

torch::Tensor Activate(const torch::Tensor& x, Activation act) {
  switch (act) {
    case Activation::kGeluErf:
      return torch::gelu(x);
    case Activation::kGeluTanh:
      return torch::gelu(x, "tanh");
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kSilu:
      return torch::silu(x);
  }
  return x;
}

// Rows per feed-forward block. Its [rows, intermediate] activations are a forward's largest
// tensors (25 MB each at 2,048 x 3,072 fp32, several alive at once); in blocks they are bounded
// by the block, not the batch. A 2,040-token document grew an idle BERT-base server by 175 MiB
// in one forward before. A multiple of the encoder's row bucket (64), so block shapes repeat.
constexpr int64_t kFeedForwardRows = 512;

// Queries per attention block for a sequence of `length` tokens.
// fp32 runs one head at a time (attention.cc), so a block's scores are [block, L]: 512 queries
// hold 16 MB at 8,192 tokens. One 8,190-token NomicBert-base layer pair's attention (2 threads,
// Xeon with AMX) took 4.1-4.2 s in blocks of 256 and 512 against 4.9-5.3 s in blocks of 128
// and 6.5-8.3 s in blocks of 32: larger blocks reuse each key and value more per pass.
// bf16 batches the heads, so its scores are [heads, block, L]: the whole sequence up to 512
// tokens, then fewer, down to 128, so they never exceed heads x max(512 x 512, 128 x L)
// values. Measured on [12 heads, L, 64] in python3-torch, 2 threads: at L = 512 one block
// took 7.1 ms in bf16 against 9.8 ms in blocks of 128; at L = 4,096 blocks of 128 took 477 ms
// against 657 ms for one block.
int64_t QueryBlock(int64_t length, torch::ScalarType dtype) {
  constexpr int64_t kBlock = 512;
  if (dtype == torch::kFloat32) return std::min(length, kBlock);
  constexpr int64_t kScoresPerHead = 512 * 512;
  constexpr int64_t kMinBlock = 128;
  return std::max(kMinBlock, std::min(length, kScoresPerHead / length));
}

// From this many rows on, a layer projects queries, keys and values one head at a time and
// attends that head before projecting the next: [rows, 3 x head_dim] at a time instead of
// [rows, 3 x hidden], which for one 8,192-token NomicBert-base window is 6 MB against 75 MB.
// Below it, one projection of every head is one larger GEMM. The encoder's batches stay
// below it unless one sequence is long (--max_batch_tokens defaults to 2,048).
constexpr int64_t kProjectHeadByHeadFromRows = 4096;

}  // namespace

torch::Tensor Norm(const torch::Tensor& x, const NormWeights& w, double eps) {
  return torch::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, w.weight, w.bias, eps)
      .to(x.scalar_type());
}

torch::Tensor Embeddings(const EncoderWeights& w, const torch::Tensor& ids,
                         const torch::Tensor& positions, double eps) {
  torch::Tensor x = w.word_embeddings.index_select(0, ids);
  if (w.position_embeddings.defined()) x = x + w.position_embeddings.index_select(0, positions);
  if (w.token_type_embedding.defined()) x = x + w.token_type_embedding;
  return Norm(x, w.embeddings_norm, eps);
}

torch::Tensor SelfAttention(const torch::Tensor& x, const LayerWeights& layer,
                            const PackedSequences& batch, const EncoderConfig& config,
                            const RotaryEmbedding* rotary) {
  const int64_t rows = x.size(0);
  const int64_t heads = config.num_attention_heads;
  const int64_t head_dim = config.head_dim();
  // TempScale: dividing sequence b's logits by tau_b is scaling its queries by 1/tau_b, after
  // the rotary positions (which rotate queries and keys, not logits).
  const double base_scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  // int8 keeps attention in fp32: with bf16 attention (7.6 ms against 11.9 ms per
  // [12 heads, 512, 64]) its pooled cosine to fp32 fell to 0.984 on real text at tau 0.5
  // (0.9995 with fp32 attention), though bf16 linear layers with the same attention hold
  // 0.99997.
  torch::Tensor context = torch::empty({rows, heads * head_dim}, x.options());
  context.slice(0, batch.offsets.back()).zero_();  // the row bucket's idle rows
  // One head of a short sequence projected head by head, copied to where the whole projection
  // would hold it: oneDNN's gemm:jit rounds attention differently for another row stride, and
  // such a sequence alone (under the threshold) takes the whole projection. Read in place, a
  // text alone and in a batch past the threshold differed by 2.7e-6 in fp32 and by 0.061 in
  // int8. Only a batch that mixes short sequences past the threshold pays the copy, and it
  // holds the whole projection of its longest short sequence, reused for every head.
  torch::Tensor short_heads;  // [rows of the longest short sequence, heads, 3, head_dim]
  auto as_if_whole = [&](const torch::Tensor& head, int64_t h) {
    const int64_t length = head.size(0);
    if (!short_heads.defined() || short_heads.size(0) < length) {
      short_heads = torch::empty({length, heads, 3, head_dim}, head.options());
    }
    torch::Tensor at = short_heads.slice(0, 0, length).slice(1, h, h + 1);
    at.copy_(head);
    return at;
  };
  // Attends heads [first, first + projection.size(1)) of every sequence, reading them from
  // `projection` ([rows, heads, 3, head_dim]) and writing them where they lie in the context.
  auto attend = [&](const torch::Tensor& projection, int64_t first) {
    const int64_t count = projection.size(1);
    const bool by_head = count < heads;
    for (int64_t b = 0; b < batch.size(); ++b) {
      const int64_t begin = batch.offsets[b], end = batch.offsets[b + 1];
      torch::Tensor rows_of_b = projection.slice(0, begin, end);
      if (by_head && end - begin < kProjectHeadByHeadFromRows) {
        rows_of_b = as_if_whole(rows_of_b, first);
      }
      const torch::Tensor seq = rows_of_b.permute({2, 1, 0, 3});
      torch::Tensor q = seq[0], k = seq[1];  // [heads, L, head_dim]
      if (rotary != nullptr) {
        rotary->ApplyInPlace(q, batch.angles[b]);
        rotary->ApplyInPlace(k, batch.angles[b]);
      }
      torch::Tensor out = context.slice(0, begin, end)
                              .view({end - begin, heads, head_dim})
                              .slice(1, first, first + count)
                              .transpose(0, 1);
      BlockedSelfAttention(q, k, seq[2], base_scale / batch.temperatures[b],
                           QueryBlock(end - begin, x.scalar_type()), out);
    }
  };
  if (rows < kProjectHeadByHeadFromRows || layer.qkv_heads.empty()) {
    attend(ApplyLinear(x, layer.qkv).view({rows, heads, 3, head_dim}), 0);
  } else {
    for (int64_t h = 0; h < heads; ++h) {
      attend(ApplyLinear(x, layer.qkv_heads[h]).view({rows, 1, 3, head_dim}), h);
    }
  }
  return ApplyLinear(context, layer.attention_output);
}

torch::Tensor FeedForward(const torch::Tensor& x, const LayerWeights& layer,
                          const EncoderConfig& config) {
  const int64_t inner = config.intermediate_size;
  auto block = [&](const torch::Tensor& in) {
    torch::Tensor hidden = ApplyLinear(in, layer.mlp_in);
    hidden = config.gated_mlp
                 ? hidden.slice(1, 0, inner) * Activate(hidden.slice(1, inner), config.hidden_act)
                 : Activate(hidden, config.hidden_act);
    return ApplyLinear(hidden.contiguous(), layer.mlp_out);
  };
  const int64_t rows = x.size(0);
  if (rows <= kFeedForwardRows) return block(x);
  torch::Tensor out = torch::empty_like(x);
  for (int64_t begin = 0; begin < rows; begin += kFeedForwardRows) {
    const int64_t end = std::min(rows, begin + kFeedForwardRows);
    out.slice(0, begin, end).copy_(block(x.slice(0, begin, end)));
  }
  return out;
}

// Residuals are added into the sublayer's fresh output, in place, and each input is let go
// once it has been read for the last time: an 8,192-row layer then holds at most three
// [rows, hidden] tensors beside its sublayer's own, not five, and allocates two fewer per
// layer.
torch::Tensor TransformerLayer(torch::Tensor x, const LayerWeights& layer,
                               const PackedSequences& batch, const EncoderConfig& config,
                               const RotaryEmbedding* rotary) {
  const double eps = config.layer_norm_eps;
  if (config.prenorm) {
    torch::Tensor h =
        SelfAttention(Norm(x, layer.attention_norm, eps), layer, batch, config, rotary).add_(x);
    x.reset();
    return FeedForward(Norm(h, layer.output_norm, eps), layer, config).add_(h);
  }
  torch::Tensor sum = SelfAttention(x, layer, batch, config, rotary).add_(x);
  x.reset();
  const torch::Tensor h = Norm(sum, layer.attention_norm, eps);
  sum.reset();
  return Norm(FeedForward(h, layer, config).add_(h), layer.output_norm, eps);
}

}  // namespace embedding::model_store
