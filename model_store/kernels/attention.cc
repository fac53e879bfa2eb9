#include "model_store/kernels/attention.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "model_store/kernels/fused_attention.h"
#include "model_store/kernels/onednn_support.h"
#include "model_store/kernels/torch_compat.h"

namespace embedding::model_store {
namespace {

using dt = dnnl::memory::data_type;

// The plain path's two products, built once for every shape: with runtime dimensions and
// strides, one primitive reads any head of any sequence where it lies (gemm:jit; on a Xeon with
// AMX, 2 threads, within noise of the per-shape brgemm kernels at 512 x 64 x 512 and
// 128 x 4,096 x 64, and ~10x cheaper to build).
struct AttentionMatmuls {
  dnnl::matmul::primitive_desc scores_pd, context_pd;
  dnnl::matmul scores, context;
};

// `rank` 2: one head's [rows, d] matrices; 3: every head's, [heads, rows, d].
AttentionMatmuls* BuildMatmuls(dt type, int rank) {
  // Runtime strides, but which one is the unit stride is fixed: with both left open oneDNN
  // 2.6 picks its reference kernel (ref:any, ~1 s per 128 x 8,192 x 32 product).
  constexpr auto kAny = DNNL_RUNTIME_DIM_VAL;
  const dnnl::memory::dims any(rank, kAny);
  dnnl::memory::dims row_strides(rank, kAny), column_strides(rank, kAny);
  row_strides[rank - 1] = 1;
  column_strides[rank - 2] = 1;
  const dnnl::memory::desc rows(any, type, row_strides);
  const dnnl::memory::desc columns(any, type, column_strides);
  dnnl::primitive_attr scaled;
  scaled.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
  scaled.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr plain;
  plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto* m = new AttentionMatmuls;
  // Q [block, d] K^T [d, L] (K's rows read as columns), then P [block, L] V [L, d].
  m->scores_pd =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(rows, columns, rows), scaled, CpuEngine());
  m->context_pd =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(rows, rows, rows), plain, CpuEngine());
  m->scores = dnnl::matmul(m->scores_pd);
  m->context = dnnl::matmul(m->context_pd);
  return m;
}

// Each built on first use: a CPU without bf16 never describes the bf16 pair.
const AttentionMatmuls& Matmuls(torch::ScalarType type) {
  if (type == torch::kBFloat16) {
    static const AttentionMatmuls* const bf16 = BuildMatmuls(dt::bf16, 2);
    return *bf16;
  }
  static const AttentionMatmuls* const fp32 = BuildMatmuls(dt::f32, 2);
  return *fp32;
}

// Every head of a short sequence in one oneDNN call per product: [heads, L, d] against
// [heads, d, L], then [heads, L, L] against [heads, L, d], so one pair serves every length and
// reads heads where they lie.
const AttentionMatmuls& HeadBatchedMatmuls() {
  static const AttentionMatmuls* const fp32 = BuildMatmuls(dt::f32, 3);
  return *fp32;
}

dnnl::memory::desc BatchDesc(const torch::Tensor& t) {
  return dnnl::memory::desc({t.size(0), t.size(1), t.size(2)}, dt::f32,
                            {t.stride(0), t.stride(1), t.stride(2)});
}

// fp32, every key, every query: out = softmax(Q K^T scale) V for all heads of the call, query
// head g of every key/value group in one call per product.
void HeadBatchedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, torch::Tensor& out) {
  const AttentionMatmuls& m = HeadBatchedMatmuls();
  const int64_t kv_heads = q.size(0), group = q.size(1), length = k.size(1);
  const torch::Tensor keys_t = k.transpose(1, 2);  // [kv, d, L], in place
  const torch::Tensor scores = torch::empty({kv_heads, length, length}, torch::kFloat32);
  const torch::Tensor scores_scratch = Scratchpad(m.scores_pd);
  const torch::Tensor context_scratch = Scratchpad(m.context_pd);
  float output_scale = static_cast<float>(scale);
  const dnnl::memory scale_memory({{1}, dt::f32, dnnl::memory::format_tag::a}, CpuEngine(),
                                  &output_scale);
  dnnl::stream stream(CpuEngine());
  for (int64_t g = 0; g < group; ++g) {
    const torch::Tensor queries = q.select(1, g), context = out.select(1, g);
    m.scores.execute(
        stream, {{DNNL_ARG_SRC, AsMemory(BatchDesc(queries), queries)},
                 {DNNL_ARG_WEIGHTS, AsMemory(BatchDesc(keys_t), keys_t)},
                 {DNNL_ARG_DST, AsMemory(BatchDesc(scores), scores)},
                 {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_memory},
                 {DNNL_ARG_SCRATCHPAD, AsMemory(m.scores_pd.scratchpad_desc(), scores_scratch)}});
    stream.wait();
    const torch::Tensor probabilities = torch::softmax(scores, -1);
    m.context.execute(stream, {{DNNL_ARG_SRC, AsMemory(BatchDesc(probabilities), probabilities)},
                               {DNNL_ARG_WEIGHTS, AsMemory(BatchDesc(v), v)},
                               {DNNL_ARG_DST, AsMemory(BatchDesc(context), context)},
                               {DNNL_ARG_SCRATCHPAD,
                                AsMemory(m.context_pd.scratchpad_desc(), context_scratch)}});
    stream.wait();
  }
}

// What a block of queries [begin, end) against keys [first_key, end_key) gets besides the
// product: ALiBi's distances |i - j| (when the pattern has slopes) and the keys it must not see,
// `hidden` over the score columns from `hidden_from` on. A causal layer without a band hides
// only the block's own diagonal square (keys past the block are never read), so its mask is
// [block x block], not [block x L].
struct BlockMask {
  // On `device`, where the scores lie.
  BlockMask(const AttentionPattern& pattern, int64_t begin, int64_t end, int64_t first_key,
            int64_t end_key, const torch::Device& device)
      : begin(begin), end(end) {
    if (!pattern.alibi.empty()) {
      distances = KeyOffsets(begin, end, first_key, end_key, device).abs_();
    }
    if (pattern.relative_bias.defined()) {
      buckets =
          RelativePositionBuckets(KeyOffsets(begin, end, first_key, end_key, device),
                                  pattern.relative_bias.size(-1), pattern.relative_max_distance)
              .flatten();
    }
    if (pattern.band > 0) {
      const torch::Tensor offsets = KeyOffsets(begin, end, first_key, end_key, device);
      hidden = offsets.abs().gt(static_cast<double>(pattern.band));
      if (pattern.causal) hidden.logical_or_(offsets.gt(0));
    } else if (pattern.causal) {
      hidden = KeyOffsets(begin, end, begin, end, device).gt(0);
      hidden_from = begin - first_key;
    }
  }

  // Adds -slope |i - j| or the relative bias (one head's [buckets], or every head's [heads,
  // buckets] against scores [heads, block, keys]) and hides the masked keys of `scores`
  // ([..., block, keys]).
  void Apply(const torch::Tensor& scores, const torch::Tensor& slopes,
             const torch::Tensor& bias) const {
    if (slopes.defined()) scores.sub_(slopes * distances);
    if (bias.defined())
      scores.add_(bias.index_select(bias.dim() - 1, buckets).view(scores.sizes()));
    if (hidden.defined()) scores.slice(-1, hidden_from).masked_fill_(hidden, -INFINITY);
  }

  int64_t begin, end;
  torch::Tensor distances, buckets, hidden;
  int64_t hidden_from = 0;
};

// The plain way, one head's block of queries at a time, in fp32 or bf16: the scores' product
// with the scale as its output scale, softmax in place, the values' product written straight
// into `out`. Through oneDNN because LibTorch 1.13 without MKL runs a batched fp32 matmul as a
// loop of BLAS calls, and Debian's OpenBLAS 0.3.21 takes these CPUs for a Prescott (no AVX).
class PlainAttention {
 public:
  // `length` keys; the queries are the sequence's last `queries` positions.
  PlainAttention(int64_t length, int64_t queries, int64_t query_block,
                 const AttentionPattern& pattern, torch::ScalarType type)
      : length_(length),
        first_query_(length - queries),
        query_block_(query_block),
        pattern_(pattern),
        type_(type) {}

  // One head's queries [begin, end) of `q`: `q`, `out` [queries, d], `k`, `v` [L, d]. `slope`: 0,
  // or ALiBi's for this head; `bias`: undefined, or this head's relative bias [buckets].
  void Block(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t begin,
             int64_t end, double scale, double slope, const torch::Tensor& bias,
             const torch::Tensor& out) {
    const AttentionMatmuls& m = Matmuls(type_);
    if (!scores_.defined()) {  // on first use: beside FusedAttention it is seldom needed
      scores_ = torch::empty({std::min(length_ - first_query_, query_block_) * length_}, type_);
      scores_scratch_ = Scratchpad(m.scores_pd);
      context_scratch_ = Scratchpad(m.context_pd);
    }
    // The block's queries' positions in the sequence.
    const int64_t from = first_query_ + begin, to = first_query_ + end;
    // A local or causal layer reads only the keys it reaches: O(L x band), or half of L^2.
    const auto [first_key, end_key] = KeyRange(pattern_, from, to, length_);
    const torch::Tensor scores = scores_.slice(0, 0, (end - begin) * (end_key - first_key))
                                     .view({end - begin, end_key - first_key});
    const torch::Tensor keys_t = k.slice(0, first_key, end_key).t();  // [d, keys], in place
    const torch::Tensor values = v.slice(0, first_key, end_key);
    const torch::Tensor queries = q.slice(0, begin, end);
    float output_scale = static_cast<float>(scale);
    const dnnl::memory scale_memory({{1}, dt::f32, dnnl::memory::format_tag::a}, CpuEngine(),
                                    &output_scale);
    dnnl::stream& stream = stream_;
    m.scores.execute(
        stream, {{DNNL_ARG_SRC, AsMemory(MatrixDesc(queries), queries)},
                 {DNNL_ARG_WEIGHTS, AsMemory(MatrixDesc(keys_t), keys_t)},
                 {DNNL_ARG_DST, AsMemory(MatrixDesc(scores), scores)},
                 {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_memory},
                 {DNNL_ARG_SCRATCHPAD, AsMemory(m.scores_pd.scratchpad_desc(), scores_scratch_)}});
    if (!pattern_.plain()) {
      if (!mask_ || mask_->begin != from || mask_->end != to) {
        mask_.emplace(pattern_, from, to, first_key, end_key, torch::kCPU);
      }
      mask_->Apply(scores, slope != 0 ? torch::scalar_tensor(slope) : torch::Tensor(), bias);
    }
    const dnnl::memory::desc scores_desc = MatrixDesc(scores);
    const dnnl::memory scores_memory = AsMemory(scores_desc, scores);
    Softmax(scores_desc)
        .execute(stream, {{DNNL_ARG_SRC, scores_memory}, {DNNL_ARG_DST, scores_memory}});
    const torch::Tensor context = out.slice(0, begin, end);
    m.context.execute(stream, {{DNNL_ARG_SRC, scores_memory},
                               {DNNL_ARG_WEIGHTS, AsMemory(MatrixDesc(values), values)},
                               {DNNL_ARG_DST, AsMemory(MatrixDesc(context), context)},
                               {DNNL_ARG_SCRATCHPAD,
                                AsMemory(m.context_pd.scratchpad_desc(), context_scratch_)}});
    stream.wait();
  }

 private:
  // Built once per block shape (two at most: the full block and the last) and reused for every
  // head: describing a softmax costs more than running one on a short sequence's block.
  const dnnl::softmax_forward& Softmax(const dnnl::memory::desc& scores) {
    for (const auto& [desc, softmax] : softmaxes_) {
      if (desc == scores) return softmax;
    }
    softmaxes_.emplace_back(
        scores, dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
                    dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, scores, 1),
                    CpuEngine())));
    return softmaxes_.back().second;
  }

  const int64_t length_, first_query_, query_block_;
  const AttentionPattern& pattern_;
  const torch::ScalarType type_;
  std::vector<std::pair<dnnl::memory::desc, dnnl::softmax_forward>> softmaxes_;
  std::optional<BlockMask> mask_;     // the current block's, kept while every head reads it
  dnnl::stream stream_{CpuEngine()};  // one per sequence, as every block runs on it
  torch::Tensor scores_, scores_scratch_, context_scratch_;
};

// Every head of a short bf16 sequence in one batched LibTorch call per block, which hands the
// batch to oneDNN's brgemm whole; and every pattern the fused kernels do not take on another
// device (LibTorch's ops only, on q's device). A key/value head's query heads are stacked as
// rows of one product ([group x block, d] against its [d, keys]), so keys and values are read
// where they lie, never repeated per query head.
void BatchedHeadsAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           double scale, int64_t query_block, const AttentionPattern& pattern,
                           torch::Tensor& out) {
  const int64_t kv_heads = q.size(0), group = q.size(1), queries = q.size(2), d = q.size(3);
  const int64_t length = k.size(1), first_query = length - queries;
  torch::Tensor slopes;
  if (!pattern.alibi.empty()) {
    slopes = torch::tensor(pattern.alibi, torch::TensorOptions().dtype(torch::kFloat64))
                 .to(q.device(), torch::kFloat32)
                 .view({-1, 1, 1});
  }
  for (int64_t begin = 0; begin < queries; begin += query_block) {
    const int64_t end = std::min(queries, begin + query_block);
    const int64_t from = first_query + begin, to = first_query + end;  // positions
    const auto [first_key, end_key] = KeyRange(pattern, from, to, length);
    const torch::Tensor keys_t = k.slice(1, first_key, end_key).transpose(1, 2);  // [kv, d, n]
    // Scaling the [block x d] queries costs less than scaling the [block x L] scores.
    const torch::Tensor queries =
        (q.slice(2, begin, end) * scale).reshape({kv_heads, group * (end - begin), d});
    torch::Tensor scores = torch::bmm(queries, keys_t);
    if (!pattern.plain()) {
      BlockMask(pattern, from, to, first_key, end_key, q.device())
          .Apply(scores.view({kv_heads * group, end - begin, end_key - first_key}), slopes,
                 pattern.relative_bias);
    }
    out.slice(2, begin, end)
        .copy_(torch::bmm(torch::softmax(scores, -1), v.slice(1, first_key, end_key))
                   .view({kv_heads, group, end - begin, d}));
  }
}

}  // namespace

std::pair<int64_t, int64_t> KeyRange(const AttentionPattern& pattern, int64_t begin, int64_t end,
                                     int64_t length) {
  const int64_t band = pattern.band;
  const int64_t first = band > 0 ? std::max<int64_t>(0, begin - band) : 0;
  if (pattern.causal) return {first, end};
  return {first, band > 0 ? std::min(length, end + band) : length};
}

torch::Tensor RelativePositionBuckets(const torch::Tensor& offsets, int64_t buckets,
                                      int64_t max_distance) {
  // transformers computes n = i - j; keys after the query take the upper half.
  const int64_t half = buckets / 2, exact = half / 2;
  const torch::Tensor n = -offsets;
  const torch::Tensor upper = n.lt(0).to(torch::kLong) * half;
  const torch::Tensor distance = n.abs();
  // In fp32, as its torch.log(n.float() / max_exact) / math.log(...) is, then truncated.
  const torch::Tensor large =
      (torch::log(distance.clamp_min(1) / static_cast<double>(exact)) /
       std::log(static_cast<double>(max_distance) / static_cast<double>(exact)) *
       static_cast<double>(half - exact))
          .to(torch::kLong)
          .add_(exact)
          .clamp_max_(half - 1);
  return upper + torch::where(distance.lt(exact), distance.to(torch::kLong), large);
}

torch::Tensor KeyOffsets(int64_t begin, int64_t end, int64_t first_key, int64_t end_key,
                         const torch::Device& device) {
  const auto fp32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  return torch::arange(first_key, end_key, fp32).unsqueeze(0) -
         torch::arange(begin, end, fp32).unsqueeze(1);
}

void BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, int64_t query_block, const AttentionPattern& pattern,
                          torch::Tensor& out) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::attention", std::vector<c10::IValue>());
  const int64_t kv_heads = q.size(0), group = q.size(1), queries = q.size(2), length = k.size(1);
  const bool bf16 = q.scalar_type() == torch::kBFloat16;
  if (bf16 && length < kBf16HeadByHeadFromKeys) {
    BatchedHeadsAttention(q, k, v, scale, query_block, pattern, out);
    return;
  }
  if (!bf16 && pattern.plain() && queries == length && length < kHeadBatchedBelowKeys) {
    HeadBatchedAttention(q, k, v, scale, out);
    return;
  }
  PlainAttention plain(length, queries, query_block, pattern, q.scalar_type());
  auto slope = [&](int64_t kv, int64_t g) {
    return pattern.alibi.empty() ? 0.0 : pattern.alibi[kv * group + g];
  };
  auto bias = [&](int64_t kv, int64_t g) {
    return pattern.relative_bias.defined() ? pattern.relative_bias[kv * group + g]
                                           : torch::Tensor();
  };
  // Causal or not; nothing added to the logits.
  const bool fusable =
      pattern.alibi.empty() && !pattern.relative_bias.defined() && pattern.band <= 0;
  if (bf16 || !fusable || length < kFusedAttentionFromKeys) {
    // Blocks outer, heads inner: a block's mask is built once for all heads.
    for (int64_t begin = 0; begin < queries; begin += query_block) {
      const int64_t end = std::min(queries, begin + query_block);
      for (int64_t kv = 0; kv < kv_heads; ++kv) {
        for (int64_t g = 0; g < group; ++g) {
          plain.Block(q[kv][g], k[kv], v[kv], begin, end, scale, slope(kv, g), bias(kv, g),
                      out[kv][g]);
        }
      }
    }
    return;
  }
  // Key/value heads outer: the fused path packs each once for its whole group.
  FusedAttention fused(length, q.size(3), query_block, pattern.causal, length - queries);
  for (int64_t kv = 0; kv < kv_heads; ++kv) {
    fused.SetHead(k[kv], v[kv]);
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t begin = 0; begin < queries; begin += query_block) {
        const int64_t end = std::min(queries, begin + query_block);
        if (!fused.Block(q[kv][g], begin, end, scale, out[kv][g])) {
          plain.Block(q[kv][g], k[kv], v[kv], begin, end, scale, 0.0, torch::Tensor(), out[kv][g]);
        }
      }
    }
  }
}

void TorchOpsSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           double scale, int64_t query_block, const AttentionPattern& pattern,
                           torch::Tensor& out) {
  const int64_t kv_heads = q.size(0), group = q.size(1), queries = q.size(2), d = q.size(3);
  const bool whole = queries == k.size(1);
  const bool by_position =  // a causal mask, a band, or both
      (pattern.causal || pattern.band > 0) && pattern.alibi.empty() &&
      !pattern.relative_bias.defined();
  if (pattern.plain()) {
    // A key/value head's query heads read the same keys and values: as one head of group x
    // queries rows, K and V are never copied per query head (no grouped-query support needed).
    out.copy_(ScaledDotProductAttention(q.reshape({kv_heads, 1, group * queries, d}),
                                        k.unsqueeze(1), v.unsqueeze(1), scale, false)
                  .view({kv_heads, group, queries, d}));
    return;
  }
  if (by_position && whole) {
    // These masks go by query position, so a group's query heads go one at a time, each against
    // its group's keys and values where they lie. A band is a [L, L] mask (L^2 bytes), read by
    // the memory-efficient kernel.
    torch::Tensor band;
    if (pattern.band > 0) {
      const torch::Tensor offsets = KeyOffsets(0, queries, 0, queries, q.device());  // j - i
      band = offsets.abs().le(static_cast<double>(pattern.band));
      if (pattern.causal) band.logical_and_(offsets.le(0));
    }
    for (int64_t g = 0; g < group; ++g) {
      out.select(1, g).copy_(ScaledDotProductAttention(q.select(1, g).unsqueeze(1), k.unsqueeze(1),
                                                       v.unsqueeze(1), scale,
                                                       pattern.causal && !band.defined(), band)
                                 .squeeze(1));
    }
    return;
  }
  BatchedHeadsAttention(q, k, v, scale, query_block, pattern, out);
}

}  // namespace embedding::model_store
