// Internal to model_store: scaled dot-product self-attention for one unpadded sequence, with
// memory bounded by a block of queries. Scores for `query_block` queries at a time, never the
// whole [heads x L x L] matrix: an 8,192-token window would need gigabytes per layer.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace embedding::model_store {

// From this many keys on, fp32 attention folds its softmax into its two products
// (FusedAttention). That saves the softmax's passes over a [512 x L] block of scores once the
// block has left the L2 cache (2 MB at L = 1,024) and costs an exponential in the first
// product's epilogue and a 65th column in its keys. Measured on an AMD EPYC (avx512, 1 MB of
// L2 per core), 2 threads, against the plain way: 1.2x slower at L = 1,024, even at 2,048,
// 1.06x faster at 4,096, 1.27x at 8,190.
inline constexpr int64_t kFusedAttentionFromKeys = 4096;

// From this many keys on, bf16 attends one head at a time through the plain path's oneDNN
// products, below it every head in one batched LibTorch call. Measured on [12 heads, L, 64],
// AMD EPYC (avx512_bf16, no AMX), 2 threads, one sequence's attention: batched 0.08 / 0.33 /
// 0.90 ms at L = 16 / 128 / 256 against 0.30 / 0.59 / 0.88 ms one head at a time (each call
// costs a few microseconds); at L = 512 / 2,048 / 4,096, 14 / 46 / 377 ms batched against
// 2.2 / 33 / 116 ms by head. The choice rests on the sequence's own length only, so a text
// takes the same kernels alone and in any batch (a batched product's kernel varies with the
// number of heads in the call: 1 against 12 rounded a 5-token sequence's context differently).
inline constexpr int64_t kBf16HeadByHeadFromKeys = 512;

// Below this many keys, fp32 attention with every key and no bias runs all of a sequence's
// heads in one oneDNN call per product ([heads, L, d] x [heads, d, L], softmax, x [heads, L, d])
// instead of three calls per head: at these lengths a head's products are too small to
// outweigh each call's cost. BERT-base int8 forward, AMD EPYC (avx512_vnni), 2 threads,
// interleaved runs: one sequence of 64 tokens 16.3 / 18.3 ms against 23.9 / 19.5, of 128 tokens
// 28.3 / 33.3 ms against 30.7 / 36.4; at 512, 152 / 170 ms against 140 / 145 (the [heads, L, L]
// scores, 12 MB, leave the cache). The choice rests on the sequence's own length only, and
// callers pass every head at these lengths, so a text takes the same kernels in any batch.
inline constexpr int64_t kHeadBatchedBelowKeys = 256;

// Which keys a query attends and what its logits get added: the pattern of one call's heads.
struct AttentionPattern {
  // Empty, or one ALiBi slope per query head of the call: head h's logit for query i and key j
  // gets -alibi[h] * |i - j| added after the scale (symmetric ALiBi; the caller divides the
  // slopes by tau with the rest of the logit).
  std::vector<double> alibi;
  // 0 (global), or a local layer's half-width: query i attends only keys with |i - j| <= band.
  int64_t band = 0;
  // Query i attends only keys j <= i (a decoder). With a band, keys i - band <= j <= i.
  bool causal = false;
  // Undefined, or a learned relative position bias (MPNet's): [query heads of the call,
  // buckets] fp32, already divided by tau; head h's logit for query i and key j gets
  // relative_bias[h][RelativePositionBuckets(j - i)] added after the scale.
  torch::Tensor relative_bias;
  int64_t relative_max_distance = 128;
  // Every key, nothing added.
  bool plain() const { return alibi.empty() && !relative_bias.defined() && band <= 0 && !causal; }
};

// The bidirectional relative-position buckets of MPNet (and T5's encoder), as transformers'
// relative_position_bucket computes them: half the buckets for keys after the query; within a
// half, exact distances below a quarter of the buckets, then logarithmic up to `max_distance`,
// and the last bucket beyond. `offsets` (j - i, fp32, as KeyOffsets gives them) -> int64.
torch::Tensor RelativePositionBuckets(const torch::Tensor& offsets, int64_t buckets,
                                      int64_t max_distance);

// The keys queries [begin, end) read: all of [0, length), or the ones a band reaches, and under
// a causal mask none past the block's last query: a causal layer does about half the work.
std::pair<int64_t, int64_t> KeyRange(const AttentionPattern& pattern, int64_t begin, int64_t end,
                                     int64_t length);

// j - i for queries [begin, end) against keys [first_key, end_key), fp32, on `device`.
torch::Tensor KeyOffsets(int64_t begin, int64_t end, int64_t first_key, int64_t end_key,
                         const torch::Device& device = torch::kCPU);

// out = softmax(Q K^T * scale) V for one sequence, with grouped-query heads. `q` and `out`:
// [kv_heads, group, queries, head_dim]; `k`, `v`: [kv_heads, L, head_dim]; query head (g of
// group kv) reads key/value head kv, which is never copied per query head. The queries are the
// sequence's last `queries` <= L positions: all of them, or a continuation's after keys and
// values cached from its prefix (row r is position L - queries + r for every mask and bias). Views
// with unit stride in the last dimension and any other strides, so heads are read from a packed
// projection and written into the layer's [L, heads x head_dim] context in place. No padding: every
// key is real; masks come from `pattern` alone (the mask stays -inf whatever tau). `scale` is 1 /
// (sqrt(head_dim) * tau): TempScale's temperature divides the logits, which is the same as scaling
// them. Everything runs in `q`'s dtype (a bf16 softmax measured 2-3x faster than one through fp32
// on this CPU). Exact in fp32 to rounding, at every tau, on either fp32 path. A call's heads are
// computed independently of each other: head h gives the same bits whether it comes alone or with
// the others, except for bf16 below kBf16HeadByHeadFromKeys and fp32 below
// kHeadBatchedBelowKeys, whose callers always pass every head.
// In fp32 from kFusedAttentionFromKeys on, a plain() or causal-only pattern takes the fused path.
void BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, int64_t query_block, const AttentionPattern& pattern,
                          torch::Tensor& out);

// BlockedSelfAttention's arithmetic through LibTorch's own ops alone, so on whatever device q
// lies (the encoder's path on a GPU; the suite runs it on the CPU). Same arguments and result.
// Every key, or a whole causal sequence: the fused scaled-dot-product kernel where this
// LibTorch has one (torch_compat.h), which holds no [L, L] matrix; a whole sequence's band goes
// there as an [L, L] bool mask. ALiBi, relative bias and a continuation's masked queries:
// blocks of `query_block` queries of every head at once ([heads, block, keys] scores at a time).
void TorchOpsSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           double scale, int64_t query_block, const AttentionPattern& pattern,
                           torch::Tensor& out);

}  // namespace embedding::model_store
