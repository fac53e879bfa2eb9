#include "model_store/kernels/int8_matmul.h"

#include <vector>

#include "model_store/kernels/onednn_support.h"
#include "model_store/kernels/row_quantize.h"

namespace embedding::model_store {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Int8Matmul::State {
  int64_t in = 0, out = 0;
  MatmulWeights weights;             // int8 [in, out], blocked where the kernel asks for it
  std::vector<float> weight_scales;  // [out]
  torch::Tensor bias;                // [out] fp32
  torch::Tensor zero_point_bias;     // [out] fp32: -128 x each column's sum of int8 weights

  struct Built {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul primitive;
  };
  PrimitiveCache<Built> by_rows;

  // Activations are quantised per row (per token), symmetric, stored as uint8 around 128: a
  // row's result then depends on that row alone, never on what else the batch holds.
  // The kernel applies the weights' per-column scales; each row's scale and the bias follow in
  // one pass of our own (Apply). oneDNN 2.6's brgemm has no fast way to take them: per-row
  // output scales are refused, a [rows, 1] post-op falls back to its reference kernel, and
  // in three dimensions ([1, rows, 1]) the per-row and per-column post-ops made the matmul
  // 1.3-1.6x slower, against 1.02-1.14x for the separate pass (512-4,096 x 384-3,072,
  // 2 threads, avx512_vnni EPYC; README).
  // The weights' scales are fixed in the primitive: oneDNN 2.6 runs int8 on AMX
  // (brg:avx512_core_amx_int8) only with scales known when the primitive is built. With
  // runtime output scales it fell back to gemm:jit, measured at 512 x 768 x 3,072, 2 threads,
  // Xeon with amx_int8: about 250 GOP/s against 1,100 through AMX.
  // The zero point 128 is not the primitive's either: (x - 128) w is x w less 128 times w's
  // column sums, a constant per column that rides in the bias (oneDNN 2.x adds the bias before
  // the output scales: a zero input gave the bias times the scale). With a zero point oneDNN
  // appends those sums to its packed weights, so no head's columns could be read as a slice.
  dnnl::matmul::primitive_desc Describe(int64_t rows, const dnnl::memory::desc& weights) const {
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, weight_scales);  // per output column
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
  const torch::Tensor weight_scales = (w.abs().amax(1) / 127.0).clamp_min(1e-12).contiguous();
  s.weight_scales.assign(weight_scales.data_ptr<float>(), weight_scales.data_ptr<float>() + s.out);
  const torch::Tensor plain =
      (w / weight_scales.unsqueeze(1)).round().clamp(-127, 127).to(torch::kInt8).t().contiguous();
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
  slice->weight_scales.assign(s.weight_scales.begin() + begin,
                              s.weight_scales.begin() + begin + count);
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

torch::Tensor Int8Matmul::Apply(const torch::Tensor& x_in) const {
  const State& s = *state_;
  const torch::Tensor x = x_in.to(torch::kFloat32).contiguous();
  const int64_t rows = x.size(0);
  const torch::Tensor row_scales = torch::empty({rows}, torch::kFloat32);
  const torch::Tensor q = torch::empty({rows, s.in}, torch::kUInt8);
  QuantizeRows(x.data_ptr<float>(), rows, s.in, q.data_ptr<uint8_t>(),
               row_scales.data_ptr<float>());
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
  ScaleRowsAddBias(result.data_ptr<float>(), rows, s.out, row_scales.data_ptr<float>(),
                   s.bias.data_ptr<float>());
  return result;
}

}  // namespace embedding::model_store
