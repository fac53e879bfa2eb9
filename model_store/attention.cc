#include "model_store/attention.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "model_store/onednn_support.h"

namespace embedding::model_store {
namespace {

using dt = dnnl::memory::data_type;

// The two products of fp32 attention, built once for every shape: with runtime dimensions and
// strides, one primitive reads any head of any sequence where it lies (gemm:jit; on a Xeon with
// AMX, 2 threads, within noise of the per-shape brgemm kernels at 512 x 64 x 512 and
// 128 x 4,096 x 64, and ~10x cheaper to build).
struct AttentionMatmuls {
  dnnl::matmul::primitive_desc scores_pd, context_pd;
  dnnl::matmul scores, context;
};

const AttentionMatmuls& Matmuls() {
  static const AttentionMatmuls* const built = [] {
    // Runtime strides, but which one is the unit stride is fixed: with both left open oneDNN
    // 2.6 picks its reference kernel (ref:any, ~1 s per 128 x 8,192 x 32 product).
    constexpr auto kAny = DNNL_RUNTIME_DIM_VAL;
    const dnnl::memory::desc rows({kAny, kAny}, dt::f32, {kAny, 1});
    const dnnl::memory::desc columns({kAny, kAny}, dt::f32, {1, kAny});
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
  }();
  return *built;
}

// fp32 through oneDNN, one head and one block of queries at a time: the scores' product with
// the scale as its output scale, softmax in place, the values' product written straight into
// `out`. LibTorch 1.13 without MKL runs a batched fp32 matmul as a loop of BLAS calls, and
// Debian's OpenBLAS 0.3.21 takes these CPUs for a Prescott (no AVX).
void OneDnnPerHead(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                   double scale, int64_t query_block, torch::Tensor& out) {
  const AttentionMatmuls& m = Matmuls();
  const int64_t length = q.size(1);
  const int64_t block_rows = std::min(length, query_block);
  torch::Tensor scores = torch::empty({block_rows, length}, torch::kFloat32);
  const torch::Tensor scores_scratch = Scratchpad(m.scores_pd);
  const torch::Tensor context_scratch = Scratchpad(m.context_pd);
  float output_scale = static_cast<float>(scale);
  const dnnl::memory scale_memory({{1}, dt::f32, dnnl::memory::format_tag::a}, CpuEngine(),
                                  &output_scale);
  dnnl::stream stream(CpuEngine());
  for (int64_t h = 0; h < q.size(0); ++h) {
    const torch::Tensor keys_t = k[h].t();  // [d, L], read in place
    for (int64_t begin = 0; begin < length; begin += query_block) {
      const int64_t end = std::min(length, begin + query_block);
      const torch::Tensor block_scores = scores.slice(0, 0, end - begin);
      const torch::Tensor queries = q[h].slice(0, begin, end);
      m.scores.execute(
          stream, {{DNNL_ARG_SRC, AsMemory(MatrixDesc(queries), queries)},
                   {DNNL_ARG_WEIGHTS, AsMemory(MatrixDesc(keys_t), keys_t)},
                   {DNNL_ARG_DST, AsMemory(MatrixDesc(block_scores), block_scores)},
                   {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_memory},
                   {DNNL_ARG_SCRATCHPAD, AsMemory(m.scores_pd.scratchpad_desc(), scores_scratch)}});
      // Per shape, kept by oneDNN's primitive cache (a block shape repeats for every head).
      const dnnl::memory::desc scores_desc = MatrixDesc(block_scores);
      const dnnl::softmax_forward softmax(dnnl::softmax_forward::primitive_desc(
          dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, scores_desc, 1),
          CpuEngine()));
      const dnnl::memory scores_memory = AsMemory(scores_desc, block_scores);
      softmax.execute(stream, {{DNNL_ARG_SRC, scores_memory}, {DNNL_ARG_DST, scores_memory}});
      const torch::Tensor context = out[h].slice(0, begin, end);
      m.context.execute(stream, {{DNNL_ARG_SRC, scores_memory},
                                 {DNNL_ARG_WEIGHTS, AsMemory(MatrixDesc(v[h]), v[h])},
                                 {DNNL_ARG_DST, AsMemory(MatrixDesc(context), context)},
                                 {DNNL_ARG_SCRATCHPAD,
                                  AsMemory(m.context_pd.scratchpad_desc(), context_scratch)}});
    }
  }
  stream.wait();
}

}  // namespace

void BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, int64_t query_block, torch::Tensor& out) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::attention", std::vector<c10::IValue>());
  if (q.scalar_type() == torch::kFloat32) return OneDnnPerHead(q, k, v, scale, query_block, out);
  // bf16: batched over heads, which LibTorch sends to oneDNN whole (7.6 ms at L = 512 against
  // 10.8 ms one head at a time).
  const int64_t length = q.size(1);
  const torch::Tensor keys_t = k.transpose(1, 2);  // [heads, d, L]
  for (int64_t begin = 0; begin < length; begin += query_block) {
    const int64_t end = std::min(length, begin + query_block);
    // Scaling the [block x d] queries costs less than scaling the [block x L] scores.
    torch::Tensor scores = torch::bmm(q.slice(1, begin, end) * scale, keys_t);
    out.slice(1, begin, end).copy_(torch::bmm(torch::softmax(scores, -1), v));
  }
}

}  // namespace embedding::model_store
