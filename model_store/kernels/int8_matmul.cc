#include "model_store/kernels/int8_matmul.h"

#include <vector>

#include "model_store/kernels/onednn_support.h"
#include "model_store/kernels/row_quantize.h"

namespace embedding::model_store {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Int8Matmul::State {
  int64_t in = 0, out = 0;
  MatmulWeights weights;          // int8 [in, out], blocked where the kernel asks for it
  torch::Tensor weight_scales;    // [out] fp32
  torch::Tensor bias;             // [out] fp32
  torch::Tensor zero_point_bias;  // [out] fp32: -128 x each column's sum of int8 weights

  struct Built {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul primitive;
  };
  PrimitiveCache<Built> by_rows;

  // Activations are quantised per row (per token), symmetric, stored as uint8 around 128: a
  // row's result then depends on that row alone, never on what else the batch holds.
  // The kernel computes the integer products alone; each row's scale, each column's scale and
  // the bias follow in one pass of our own (Apply). oneDNN 2.6's brgemm has no fast way to take
  // the row scales: per-row output scales are refused, a [rows, 1] post-op falls back to its
  // reference kernel, and in three dimensions ([1, rows, 1]) the per-row and per-column
  // post-ops made the matmul 1.3-1.6x slower, against 1.02-1.14x for the separate pass
  // (512-4,096 x 384-3,072, 2 threads, avx512_vnni EPYC; README).
  // The column scales stay out of the primitive too, so that every layer of one shape builds
  // the same primitive and oneDNN's primitive cache hands the later layers the first one's
  // kernels. With its scales fixed in each primitive (oneDNN 2.6 runs int8 on AMX or VNNI
  // brgemm only with scales known when the primitive is built; runtime scales fall back to
  // gemm:jit, 2x slower at 160 x 768 x 3,072 on an avx512_vnni EPYC) each of a BERT-base's 48
  // layers compiled its own, about 100 KB resident per layer and row count.
  // The zero point 128 is not the primitive's either: (x - 128) w is x w less 128 times w's
  // column sums, a constant per column that rides in the kernel's bias (added to the integer
  // sums before our scales). With a zero point oneDNN appends those sums to its packed
  // weights, so no head's columns could be read as a slice.
  dnnl::matmul::primitive_desc Describe(int64_t rows, const dnnl::memory::desc& weights) const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(dnnl::memory::desc({rows, in}, dt::u8, tag::ab), weights,
                           dnnl::memory::desc({1, out}, dt::f32, tag::ab),
                           dnnl::memory::desc({rows, out}, dt::f32, tag::ab)),
        attr, CpuEngine());
  }

  Built Build(int64_t rows) const {
    const dnnl::matmul::primitive_desc pd = Describe(rows, weights.desc);
    return Built{pd, dnnl::matmul(pd)};
  }
};

Int8Matmul::Int8Matmul(const torch::Tensor& weight, const torch::Tensor& bias)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const torch::Tensor w = weight.to(torch::kFloat32).contiguous();
  s.out = w.size(0);
  s.in = w.size(1);
  s.weight_scales = (w.abs().amax(1) / 127.0).clamp_min(1e-12).contiguous();
  const torch::Tensor plain =
      (w / s.weight_scales.unsqueeze(1)).round().clamp(-127, 127).to(torch::kInt8).t().contiguous();
  s.weights = PackWeights([&](int64_t rows, const auto& desc) { return s.Describe(rows, desc); },
                          dnnl::memory::desc({s.in, s.out}, dt::s8, tag::ab), plain);
  s.bias = bias.defined() ? bias.to(torch::kFloat32).contiguous()
                          : torch::zeros({s.out}, torch::kFloat32);
  // In fp64, then rounded once: exact up to 2^24 (column sums of 131,072).
  s.zero_point_bias =
      (plain.to(torch::kFloat64).sum(0) * -kActivationZeroPoint).to(torch::kFloat32).contiguous();
}

Int8Matmul::Int8Matmul(std::unique_ptr<State> state) : state_(std::move(state)) {}

Int8Matmul::~Int8Matmul() = default;

std::shared_ptr<const PackedLinear> Int8Matmul::Columns(int64_t begin, int64_t count) const {
  const State& s = *state_;
  auto slice = std::make_unique<State>();
  slice->in = s.in;
  slice->out = count;
  slice->weight_scales = s.weight_scales.narrow(0, begin, count).contiguous();
  slice->bias = s.bias.narrow(0, begin, count).contiguous();
  slice->zero_point_bias = s.zero_point_bias.narrow(0, begin, count).contiguous();
  std::optional<MatmulWeights> weights =
      SliceColumns(s.weights, begin, count,
                   [&](int64_t rows, const auto& desc) { return slice->Describe(rows, desc); });
  if (!weights) return nullptr;
  slice->weights = *std::move(weights);
  return std::shared_ptr<const Int8Matmul>(new Int8Matmul(std::move(slice)));
}

size_t Int8Matmul::primitives() const { return state_->by_rows.size(); }

std::pair<torch::Tensor, torch::Tensor> Int8Matmul::Quantize(const torch::Tensor& x_in) const {
  const torch::Tensor x = x_in.to(torch::kFloat32).contiguous();
  const int64_t rows = x.size(0);
  torch::Tensor q = torch::empty({rows, state_->in}, torch::kUInt8);
  torch::Tensor row_scales = torch::empty({rows}, torch::kFloat32);
  QuantizeRows(x.data_ptr<float>(), rows, state_->in, q.data_ptr<uint8_t>(),
               row_scales.data_ptr<float>());
  return {q, row_scales};
}

torch::Tensor Int8Matmul::Product(const torch::Tensor& q) const {
  const State& s = *state_;
  const int64_t rows = q.size(0);
  torch::Tensor result = torch::empty({rows, s.out}, torch::kFloat32);
  const auto& [pd, primitive] = s.by_rows.Get(rows, [&](int64_t n) { return s.Build(n); });
  const torch::Tensor scratch = Scratchpad(pd);
  dnnl::stream stream(CpuEngine());
  primitive.execute(stream, {{DNNL_ARG_SRC, AsMemory(pd.src_desc(), q)},
                             {DNNL_ARG_WEIGHTS, AsMemory(s.weights.desc, s.weights.data)},
                             {DNNL_ARG_BIAS, AsMemory(pd.bias_desc(), s.zero_point_bias)},
                             {DNNL_ARG_DST, AsMemory(pd.dst_desc(), result)},
                             {DNNL_ARG_SCRATCHPAD, AsMemory(pd.scratchpad_desc(), scratch)}});
  stream.wait();
  return result;
}

torch::Tensor Int8Matmul::ApplyQuantized(const torch::Tensor& q,
                                         const torch::Tensor& row_scales) const {
  const State& s = *state_;
  torch::Tensor result = Product(q);
  ScaleRowsAddBias(result.data_ptr<float>(), q.size(0), s.out, row_scales.data_ptr<float>(),
                   s.weight_scales.data_ptr<float>(), s.bias.data_ptr<float>());
  return result;
}

torch::Tensor Int8Matmul::Apply(const torch::Tensor& x) const {
  const auto [q, row_scales] = Quantize(x);
  return ApplyQuantized(q, row_scales);
}

torch::Tensor Int8Matmul::ApplyThrough(const torch::Tensor& x, const ActivateRows& activate,
                                       const PackedLinear& next) const {
  const auto* int8_next = dynamic_cast<const Int8Matmul*>(&next);
  if (int8_next == nullptr) return PackedLinear::ApplyThrough(x, activate, next);
  const State& s = *state_;
  const auto [q, row_scales] = Quantize(x);
  const int64_t rows = q.size(0);
  torch::Tensor hidden = Product(q);
  torch::Tensor hidden_q = torch::empty({rows, s.out}, torch::kUInt8);
  torch::Tensor hidden_scales = torch::empty({rows}, torch::kFloat32);
  ScaleActivateQuantizeRows(
      hidden.data_ptr<float>(), rows, s.out, row_scales.data_ptr<float>(),
      s.weight_scales.data_ptr<float>(), s.bias.data_ptr<float>(),
      [&](int64_t first, int64_t last) { activate(hidden.slice(0, first, last)); },
      hidden_q.data_ptr<uint8_t>(), hidden_scales.data_ptr<float>());
  hidden.reset();
  return int8_next->ApplyQuantized(hidden_q, hidden_scales);
}

}  // namespace embedding::model_store
