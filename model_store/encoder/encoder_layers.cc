#include "model_store/encoder/encoder_layers.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "model_store/encoder/linear_layer.h"
#include "model_store/encoder/packed_attention.h"
#include "model_store/kernels/attention.h"

namespace embedding::model_store {

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

void ActivateInPlace(const torch::Tensor& x, Activation act) {
  torch::Tensor out = x;  // the same elements: the out= forms write where they read
  switch (act) {
    case Activation::kGeluErf:
      torch::gelu_out(out, x);
      return;
    case Activation::kGeluTanh:
      torch::gelu_out(out, x, "tanh");
      return;
    case Activation::kRelu:
      torch::relu_(out);
      return;
    case Activation::kSilu:
      torch::silu_(out);
      return;
  }
}

namespace {

// Rows per feed-forward block. Its [rows, intermediate] activations are a forward's largest
// tensors (25 MB each at 2,048 x 3,072 fp32, several alive at once); in blocks they are bounded
// by the block, not the batch. A 2,040-token document grew an idle BERT-base server by 175 MiB
// in one forward before. A multiple of every row bucket above it (BucketedRows: 64 from 513
// rows on), so block shapes repeat.
constexpr int64_t kFeedForwardRows = 512;

// Queries per attention block: the scores of one head's block are [block, L], 16 MB at
// 8,192 tokens in fp32. One 8,190-token NomicBert-base layer pair's fp32 attention (2 threads,
// Xeon with AMX) took 4.1-4.2 s in blocks of 256 and 512 against 4.9-5.3 s in blocks of 128
// and 6.5-8.3 s in blocks of 32: larger blocks reuse each key and value more per pass. bf16 by
// head (from 512 keys) measured the same way on an AMD EPYC: 33 ms in blocks of 512 against
// 47 ms in blocks of 128 at L = 2,048. Below 512 keys bf16 batches the heads and a block is
// the whole sequence: [heads, L, L], at most 6 MB.
constexpr int64_t kQueryBlock = 512;

// A sequence whose own rows (BucketedRows of its length) reach this many projects its queries,
// keys and values one head at a time, attending that head before projecting the next:
// [rows, 3 x head_dim] at a time instead of [rows, 3 x hidden], which for one 8,192-token
// NomicBert-base window is 6 MB against 75 MB. Shorter sequences are projected together, all
// heads in one larger GEMM, in groups whose rows stay below it. The encoder's batches pass it
// only for a long sequence or a --max_batch_tokens above 4,096.
constexpr int64_t kProjectHeadByHeadFromRows = 4096;

// Rows are rounded up to a sixteenth of the next power of two, from 16 to 512: at most 15 idle
// rows up to 256 tokens, under an eighth of the tokens above (the kernels' time grows with the
// rows: 0.87, 0.99 and 1.05 ms at 160, 176 and 192 x 768 x 3,072 in int8, avx512_vnni EPYC),
// while a mixed corpus's batches fall into 40 shapes up to 2,048 tokens and 8 more per
// doubling, not hundreds. Each shape's kernels stay built for the server's life, one oneDNN
// primitive per linear shape, shared by the layers of that shape (int8's too, since their
// scales left the primitive). A BERT-base int8 server grew 31 MiB over 32 documents of 6-502
// tokens (24 shapes); with a 64-row bucket (8 shapes) it had grown 58 MiB while every layer
// built its own int8 primitives, and 188 MiB with a 16-row bucket (32 shapes).
// 512 rows is the coarsest bucket: 8 shapes between 4,096 and 8,192 rows, at most 511 idle
// rows in the linear layers (attention reads only real tokens).
constexpr int64_t kFinestRowBucket = 16;
constexpr int64_t kCoarsestRowBucket = 512;

}  // namespace

int64_t BucketedRows(int64_t tokens) {
  int64_t power = 1;
  while (power < tokens) power *= 2;
  const int64_t bucket = std::clamp(power / 16, kFinestRowBucket, kCoarsestRowBucket);
  return (tokens + bucket - 1) / bucket * bucket;
}

torch::Tensor Norm(const torch::Tensor& x, const NormWeights& w, double eps) {
  if (!w.weight.defined()) return x;
  if (w.rms) {  // w x / sqrt(mean(x^2) + eps), over the last dimension, in fp32
    const torch::Tensor x32 = x.to(torch::kFloat32);
    return (x32 * torch::rsqrt(x32.square().mean(-1, /*keepdim=*/true).add_(eps)))
        .mul_(w.weight)
        .to(x.scalar_type());
  }
  return torch::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, w.weight, w.bias, eps)
      .to(x.scalar_type());
}

torch::Tensor Embeddings(const EncoderWeights& w, const torch::Tensor& ids,
                         const torch::Tensor& positions, const torch::Tensor& types,
                         const torch::Tensor& row_adapters, const EncoderConfig& config) {
  torch::Tensor x = w.word_embeddings.index_select(0, ids);
  // A table's adapter term for a row is its id's row of down_t times up_t.
  auto add_adapters = [&](const LowRankAdapters* adapters, const torch::Tensor& table_rows) {
    AddAdapters(
        adapters, row_adapters,
        [&](size_t t, const torch::Tensor& rows) {
          return adapters->down[t].index_select(0, rows.numel() == table_rows.size(0)
                                                       ? table_rows
                                                       : table_rows.index_select(0, rows));
        },
        x);
  };
  add_adapters(w.word_adapters.get(), ids);
  // Gemma's sqrt(hidden), as a scalar of the weights' dtype.
  if (config.embedding_scale != 1.0) x.mul_(config.embedding_scale);
  if (w.position_embeddings.defined()) x = x + w.position_embeddings.index_select(0, positions);
  if (w.token_type_embeddings.defined()) {
    // One segment (every embedding call): type 0's row for all, as before pairs existed.
    x = types.defined() ? x + w.token_type_embeddings.index_select(0, types)
                        : x + w.token_type_embeddings[0];
    if (w.type_adapters && row_adapters.defined()) {
      add_adapters(w.type_adapters.get(), types.defined() ? types : torch::zeros_like(ids));
    }
  }
  return Norm(x, w.embeddings_norm, config.layer_norm_eps);
}

torch::Tensor SelfAttention(const torch::Tensor& x, const LayerWeights& layer,
                            const PackedSequences& batch, const EncoderConfig& config,
                            const LayerAttention& attention) {
  const int64_t rows = x.size(0);
  const int64_t heads = config.num_attention_heads;
  const int64_t kv_heads = config.key_value_heads();
  const int64_t group = heads / kv_heads;
  const int64_t head_dim = config.head_dim();
  // TempScale: dividing sequence b's logits by tau_b is scaling its queries by 1/tau_b, after
  // the q/k norm and the rotary positions (which rotate queries and keys, not logits): folded
  // in before an RMSNorm, tau would cancel out.
  const double base_scale = config.attention_scale > 0
                                ? config.attention_scale
                                : 1.0 / std::sqrt(static_cast<double>(head_dim));
  // int8 keeps attention in fp32: with bf16 attention (7.6 ms against 11.9 ms per
  // [12 heads, 512, 64]) its pooled cosine to fp32 fell to 0.984 on real text at tau 0.5
  // (0.9995 with fp32 attention), though bf16 linear layers with the same attention hold
  // 0.99997.
  torch::Tensor context = torch::empty({rows, heads * head_dim}, x.options());
  context.slice(0, batch.offsets.back()).zero_();  // the row bucket's idle rows
  // A shared prefix's keys and values [kv_heads, its rows, head_dim], normed and rotated, kept
  // for the segments that continue it (a prefix comes before them) until the layer ends.
  std::vector<torch::Tensor> prefix_keys(batch.size()), prefix_values(batch.size());
  // Attends key/value groups [first, first + count) of segment b, read from `projection`
  // ([b's rows, count, group + 2, head_dim]: each group's queries, key, value) and written
  // where its query heads lie in the context.
  auto attend = [&](int64_t b, const torch::Tensor& projection, int64_t first) {
    const int64_t begin = batch.offsets[b], end = batch.offsets[b + 1];
    const int64_t count = projection.size(1);
    const torch::Tensor seq = projection.permute({2, 1, 0, 3});  // [group + 2, count, L, d]
    torch::Tensor q = seq.slice(0, 0, group).transpose(0, 1);    // [count, group, L, d]
    torch::Tensor k = seq[group];                                // [count, L, d]
    if (layer.query_norm.weight.defined()) {
      q.copy_(Norm(q, layer.query_norm, config.layer_norm_eps));
      k.copy_(Norm(k, layer.key_norm, config.layer_norm_eps));
    }
    if (attention.rotary != nullptr) {
      attention.rotary->ApplyInPlace(q, (*attention.angles)[b]);
      attention.rotary->ApplyInPlace(k, (*attention.angles)[b]);
    }
    torch::Tensor keys = k, values = seq[group + 1];
    if (!batch.is_prefix.empty() && batch.is_prefix[b]) {
      if (!prefix_keys[b].defined()) {
        prefix_keys[b] = torch::empty({kv_heads, end - begin, head_dim}, k.options());
        prefix_values[b] = torch::empty({kv_heads, end - begin, head_dim}, k.options());
      }
      prefix_keys[b].slice(0, first, first + count).copy_(keys);
      prefix_values[b].slice(0, first, first + count).copy_(values);
    }
    if (const int64_t p = batch.prefix(b); p >= 0) {  // the prefix's keys, then its own
      keys = torch::cat({prefix_keys[p].slice(0, first, first + count), keys}, 1);
      values = torch::cat({prefix_values[p].slice(0, first, first + count), values}, 1);
    }
    torch::Tensor out = context.slice(0, begin, end)
                            .view({end - begin, kv_heads, group, head_dim})
                            .slice(1, first, first + count)
                            .permute({1, 2, 0, 3});
    // GTE's logn scale is the model's own length-adaptive temperature: tau divides it further.
    const double tau = (*attention.temperatures)[b];
    const double scale = base_scale * config.logn_scale.For(keys.size(1)) / tau;
    AttentionPattern pattern;
    pattern.band = attention.band;
    pattern.causal = config.causal;
    // TempScale divides the whole logit, ALiBi's bias with it (the mask alone stays -inf).
    for (int64_t h = 0; h < count * group && !config.alibi_slopes.empty(); ++h) {
      pattern.alibi.push_back(config.alibi_slopes[first * group + h] / tau);
    }
    pattern.relative_max_distance = config.relative_attention_max_distance;
    if (attention.relative_bias != nullptr && attention.relative_bias->defined()) {
      pattern.relative_bias =
          attention.relative_bias->slice(0, first * group, (first + count) * group) / tau;
    }
    // A banded layer's block reads block + 2 x band keys: blocks of twice the band keep its
    // cost O(L x band).
    const int64_t block =
        attention.band > 0 ? std::max<int64_t>(64, 2 * attention.band) : kQueryBlock;
    const auto kernel = batch.torch_ops ? TorchOpsSelfAttention : BlockedSelfAttention;
    const int64_t attended = batch.attended.empty() ? end - begin : batch.attended[b];
    if (attended == end - begin) {
      kernel(q, keys, values, scale, std::min(end - begin, block), pattern, out);
      return;
    }
    // A key limit (validated: no logit here depends on positions, and any band spans the
    // sequence): the first rows attend among themselves, the rest in runs no longer than the
    // keys, each against the same first keys and values.
    pattern.band = 0;
    keys = keys.slice(1, 0, attended);
    values = values.slice(1, 0, attended);
    for (int64_t r = 0; r < end - begin; r += attended) {
      const int64_t n = std::min(attended, end - begin - r);
      torch::Tensor rows = out.slice(2, r, r + n);
      kernel(q.slice(2, r, r + n), keys, values, scale, std::min(n, block), pattern, rows);
    }
  };
  // Each sequence is projected and attended the way it would be alone, so its vector does not
  // depend on its batch: a long one group by group, shorter ones with every head at once. A
  // projection covers the group's own bucket of rows (shifted back to fit before the batch's
  // last row), the row count it has alone: reading a short sequence's head from a head-by-head
  // projection (another row stride, one head per call) changed it by 2.7e-6 in fp32, 0.061 in
  // int8 and 0.033 in bf16.
  const auto window = [&](int64_t begin, int64_t tokens) {
    const int64_t own = BucketedRows(tokens);
    const int64_t from = std::min(begin, rows - own);
    return std::pair{from, x.slice(0, from, from + own)};
  };
  const auto window_adapters = [&](int64_t from, int64_t count) {
    return batch.row_adapters.defined() ? batch.row_adapters.slice(0, from, from + count)
                                        : torch::Tensor();
  };
  // LibTorch's ops (a GPU) project every segment at once: the head-by-head projection bounds
  // the CPU's memory, and its calls would each cost a kernel launch there.
  for (int64_t b = 0; b < batch.size();) {
    const int64_t begin = batch.offsets[b];
    const int64_t length = batch.offsets[b + 1] - begin;
    if (!batch.torch_ops && BucketedRows(length) >= kProjectHeadByHeadFromRows &&
        !layer.qkv_heads.empty()) {
      const auto [from, in] = window(begin, length);
      for (int64_t h = 0; h < kv_heads; ++h) {
        const torch::Tensor projection =
            ApplyLinear(in, layer.qkv_heads[h], window_adapters(from, in.size(0)))
                .view({in.size(0), 1, group + 2, head_dim});
        attend(b, projection.slice(0, begin - from, begin - from + length), h);
      }
      ++b;
      continue;
    }
    int64_t last = b + 1;  // sequences [b, last) are projected together
    while (last < batch.size() &&
           (batch.torch_ops ||
            BucketedRows(batch.offsets[last + 1] - begin) < kProjectHeadByHeadFromRows)) {
      ++last;
    }
    const auto [from, in] = window(begin, batch.offsets[last] - begin);
    const torch::Tensor projection = ApplyLinear(in, layer.qkv, window_adapters(from, in.size(0)))
                                         .view({in.size(0), kv_heads, group + 2, head_dim});
    if (AttendTogether(batch, b, last, config, attention)) {
      AttendSegmentsTogether(projection.slice(0, begin - from, batch.offsets[last] - from), layer,
                             batch, b, last, config, attention, base_scale, context);
      b = last;
      continue;
    }
    for (; b < last; ++b) {
      attend(b, projection.slice(0, batch.offsets[b] - from, batch.offsets[b + 1] - from), 0);
    }
  }
  return ApplyLinear(context, layer.attention_output, batch.row_adapters);
}

namespace {

// Each row through its moe_top_k most probable experts (softmax over the router's logits in
// fp32), weighted by those probabilities, plus the shared bias; each expert runs once, on the
// rows that chose it, so a row costs k expert MLPs whatever the expert count.
torch::Tensor MixtureOfExperts(const torch::Tensor& x, const LayerWeights& layer,
                               const EncoderConfig& config) {
  const torch::Tensor probabilities =
      torch::softmax(ApplyLinear(x.to(torch::kFloat32), layer.moe_router), -1);
  const auto [weights, experts] = probabilities.topk(config.moe_top_k, -1);
  torch::Tensor out = torch::zeros_like(x);
  for (int64_t e = 0; e < config.num_experts; ++e) {
    const torch::Tensor chosen = experts.eq(e);  // a row picks an expert at most once
    const torch::Tensor rows = chosen.any(1).nonzero().squeeze(1);
    if (rows.numel() == 0) continue;
    const torch::Tensor weight =
        (weights * chosen).sum(1).index_select(0, rows).unsqueeze(1).to(x.scalar_type());
    const torch::Tensor hidden =
        Activate(ApplyLinear(x.index_select(0, rows), layer.moe_in[e]), config.hidden_act);
    out.index_add_(0, rows, ApplyLinear(hidden, layer.moe_out[e]).mul_(weight));
  }
  return out.add_(layer.moe_bias);
}

}  // namespace

torch::Tensor FeedForward(const torch::Tensor& x, const LayerWeights& layer,
                          const EncoderConfig& config, const torch::Tensor& row_adapters,
                          bool whole) {
  if (!layer.moe_in.empty()) return MixtureOfExperts(x, layer, config);
  const int64_t inner = config.intermediate_size;
  auto block = [&](const torch::Tensor& in, int64_t first_row) {
    const torch::Tensor adapters = row_adapters.defined()
                                       ? row_adapters.slice(0, first_row, first_row + in.size(0))
                                       : torch::Tensor();
    const Activation act = config.hidden_act;
    if (config.mlp == MlpKind::kPlain) {  // a gated MLP's activation halves its width
      return ApplyLinearPair(
          in, layer.mlp_in, [&](const torch::Tensor& rows) { ActivateInPlace(rows, act); },
          layer.mlp_out, adapters);
    }
    torch::Tensor hidden = ApplyLinear(in, layer.mlp_in, adapters);
    // The activated half is copied out first: LibTorch's GELU on a half-width column slice
    // took 3.7 ms at [512, 3,072] against 0.74 ms contiguous plus 0.08 ms for the copy (2
    // threads, AMD EPYC, avx512), 6.8% of a GTE-base forward at 2,048 tokens.
    hidden = config.mlp == MlpKind::kGatedActivateFirst
                 ? Activate(hidden.slice(1, 0, inner).contiguous(), act) * hidden.slice(1, inner)
                 : hidden.slice(1, 0, inner) * Activate(hidden.slice(1, inner).contiguous(), act);
    return ApplyLinear(hidden.contiguous(), layer.mlp_out, adapters);
  };
  const int64_t rows = x.size(0);
  if (whole || rows <= kFeedForwardRows) return block(x, 0);
  torch::Tensor out = torch::empty_like(x);
  for (int64_t begin = 0; begin < rows; begin += kFeedForwardRows) {
    const int64_t end = std::min(rows, begin + kFeedForwardRows);
    out.slice(0, begin, end).copy_(block(x.slice(0, begin, end), begin));
  }
  return out;
}

// Residuals are added into the sublayer's fresh output, in place, and each input is let go
// once it has been read for the last time: an 8,192-row layer then holds at most three
// [rows, hidden] tensors beside its sublayer's own, not five, and allocates two fewer per
// layer.
torch::Tensor TransformerLayer(torch::Tensor x, const LayerWeights& layer,
                               const PackedSequences& batch, const EncoderConfig& config,
                               const LayerAttention& attention) {
  const double eps = config.layer_norm_eps;
  if (config.prenorm) {  // x + post(f(pre(x))), where post is a norm only in Gemma's sandwich
    torch::Tensor h =
        Norm(SelfAttention(Norm(x, layer.attention_norm, eps), layer, batch, config, attention),
             layer.attention_post_norm, eps)
            .add_(x);
    x.reset();
    return Norm(FeedForward(Norm(h, layer.output_norm, eps), layer, config, batch.row_adapters,
                            batch.torch_ops),
                layer.output_post_norm, eps)
        .add_(h);
  }
  torch::Tensor sum = SelfAttention(x, layer, batch, config, attention).add_(x);
  x.reset();
  const torch::Tensor h = Norm(sum, layer.attention_norm, eps);
  sum.reset();
  return Norm(FeedForward(h, layer, config, batch.row_adapters, batch.torch_ops).add_(h),
              layer.output_norm, eps);
}

}  // namespace embedding::model_store
