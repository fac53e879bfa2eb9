#include "model_store/kernels/attention.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "model_store/kernels/fused_attention.h"
#include "model_store/kernels/onednn_support.h"

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

AttentionMatmuls* BuildMatmuls(dt type) {
  // Runtime strides, but which one is the unit stride is fixed: with both left open oneDNN
  // 2.6 picks its reference kernel (ref:any, ~1 s per 128 x 8,192 x 32 product).
  constexpr auto kAny = DNNL_RUNTIME_DIM_VAL;
  const dnnl::memory::desc rows({kAny, kAny}, type, {kAny, 1});
  const dnnl::memory::desc columns({kAny, kAny}, type, {1, kAny});
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
    static const AttentionMatmuls* const bf16 = BuildMatmuls(dt::bf16);
    return *bf16;
  }
  static const AttentionMatmuls* const fp32 = BuildMatmuls(dt::f32);
  return *fp32;
}

// The plain way, one head's block of queries at a time, in fp32 or bf16: the scores' product
// with the scale as its output scale, softmax in place, the values' product written straight
// into `out`. Through oneDNN because LibTorch 1.13 without MKL runs a batched fp32 matmul as a
// loop of BLAS calls, and Debian's OpenBLAS 0.3.21 takes these CPUs for a Prescott (no AVX).
class PlainAttention {
 public:
  // `band`: 0, or the half-width of a local layer's band (keys with |i - j| <= band).
  PlainAttention(int64_t length, int64_t query_block, int64_t band, torch::ScalarType type)
      : length_(length), query_block_(query_block), band_(band), type_(type) {}

  // `slope`: 0, or ALiBi's for this head.
  void Block(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t begin,
             int64_t end, double scale, double slope, const torch::Tensor& out) {
    const AttentionMatmuls& m = Matmuls(type_);
    if (!scores_.defined()) {  // on first use: beside FusedAttention it is seldom needed
      scores_ = torch::empty({std::min(length_, query_block_) * length_}, type_);
      scores_scratch_ = Scratchpad(m.scores_pd);
      context_scratch_ = Scratchpad(m.context_pd);
    }
    // A local layer reads only the keys its band reaches: O(L x band), not O(L^2).
    const auto [first_key, end_key] = KeyRange(band_, begin, end, length_);
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
    if (slope != 0 || band_ > 0) {
      const torch::Tensor& distances = Distances(begin, end, first_key, end_key);
      if (slope != 0) scores.add_(distances, -slope);
      if (band_ > 0) scores.masked_fill_(distances.gt(static_cast<double>(band_)), -INFINITY);
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
  // |i - j| for queries [begin, end) and keys [first_key, end_key), fp32, kept while the block
  // repeats for every head.
  const torch::Tensor& Distances(int64_t begin, int64_t end, int64_t first_key, int64_t end_key) {
    if (!distances_.defined() || distances_begin_ != begin || distances_.size(0) != end - begin) {
      distances_ = KeyDistances(begin, end, first_key, end_key);
      distances_begin_ = begin;
    }
    return distances_;
  }

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

  const int64_t length_, query_block_, band_;
  const torch::ScalarType type_;
  std::vector<std::pair<dnnl::memory::desc, dnnl::softmax_forward>> softmaxes_;
  torch::Tensor distances_;
  int64_t distances_begin_ = 0;
  dnnl::stream stream_{CpuEngine()};  // one per sequence, as every block runs on it
  torch::Tensor scores_, scores_scratch_, context_scratch_;
};

}  // namespace

std::pair<int64_t, int64_t> KeyRange(int64_t band, int64_t begin, int64_t end, int64_t length) {
  if (band <= 0) return {0, length};
  return {std::max<int64_t>(0, begin - band), std::min(length, end + band)};
}

torch::Tensor KeyDistances(int64_t begin, int64_t end, int64_t first_key, int64_t end_key) {
  const auto fp32 = torch::TensorOptions().dtype(torch::kFloat32);
  return (torch::arange(begin, end, fp32).unsqueeze(1) -
          torch::arange(first_key, end_key, fp32).unsqueeze(0))
      .abs_();
}

void BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, int64_t query_block, const std::vector<double>& alibi,
                          int64_t band, torch::Tensor& out) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::attention", std::vector<c10::IValue>());
  const int64_t length = q.size(1);
  const bool bf16 = q.scalar_type() == torch::kBFloat16;
  if (bf16 && length < kBf16HeadByHeadFromKeys) {
    // Every head in one call: LibTorch hands the batch to oneDNN's brgemm whole.
    for (int64_t begin = 0; begin < length; begin += query_block) {
      const int64_t end = std::min(length, begin + query_block);
      const auto [first_key, end_key] = KeyRange(band, begin, end, length);
      const torch::Tensor keys_t = k.slice(1, first_key, end_key).transpose(1, 2);  // [h, d, n]
      // Scaling the [block x d] queries costs less than scaling the [block x L] scores.
      torch::Tensor scores = torch::bmm(q.slice(1, begin, end) * scale, keys_t);
      if (!alibi.empty() || band > 0) {
        const torch::Tensor distances = KeyDistances(begin, end, first_key, end_key);
        if (!alibi.empty()) {
          const torch::Tensor slopes =
              torch::tensor(alibi, torch::TensorOptions().dtype(torch::kFloat64))
                  .to(torch::kFloat32)
                  .view({-1, 1, 1});
          scores.sub_(slopes * distances.unsqueeze(0));
        }
        if (band > 0) scores.masked_fill_(distances.gt(static_cast<double>(band)), -INFINITY);
      }
      out.slice(1, begin, end)
          .copy_(torch::bmm(torch::softmax(scores, -1), v.slice(1, first_key, end_key)));
    }
    return;
  }
  PlainAttention plain(length, query_block, band, q.scalar_type());
  std::optional<FusedAttention> fused;
  if (!bf16 && alibi.empty() && band <= 0 && length >= kFusedAttentionFromKeys) {
    fused.emplace(length, q.size(2), query_block);
  }
  for (int64_t h = 0; h < q.size(0); ++h) {
    if (fused) fused->SetHead(k[h], v[h]);
    for (int64_t begin = 0; begin < length; begin += query_block) {
      const int64_t end = std::min(length, begin + query_block);
      if (!fused || !fused->Block(q[h], begin, end, scale, out[h])) {
        plain.Block(q[h], k[h], v[h], begin, end, scale, alibi.empty() ? 0.0 : alibi[h], out[h]);
      }
    }
  }
}

}  // namespace embedding::model_store
