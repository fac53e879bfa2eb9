#include "model_store/int8_matmul.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model_store/onednn_support.h"

namespace embedding::model_store {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Int8Matmul::State {
  int64_t in = 0, out = 0;
  MatmulWeights weights;               // int8 [in, out], blocked where the kernel asks for it
  std::vector<float> weight_scales;    // [out]
  torch::Tensor weight_scales_tensor;  // the same, [out] fp32
  torch::Tensor bias;                  // [out] fp32
  torch::Tensor column_sums;           // [out] fp64: each column's sum of int8 weights

  struct Built {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul primitive;
    // fp32 -> uint8 with the call's scale and zero point: one oneDNN pass, where LibTorch's
    // quantize_per_tensor took 13.6 ms for 4,096 x 768 and 55 ms for 4,096 x 3,072.
    dnnl::reorder quantize;
  };
  PrimitiveCache<Built> by_rows;

  // The weights' per-column scales are fixed in the primitive and the call's activation scale
  // comes in through a binary post-op: oneDNN 2.6 runs int8 on AMX (brg:avx512_core_amx_int8)
  // only with scales known when the primitive is built. With runtime output scales it fell back
  // to gemm:jit, measured at 512 x 768 x 3,072, 2 threads, Xeon with amx_int8: about 250 GOP/s
  // against 1,100 through AMX.
  // The activations' zero point is not the primitive's either: x - z times w is x times w less
  // z times w's column sums, and that term rides in the bias. With a zero point oneDNN appends
  // those sums to its packed weights, so no head's columns could be read as a slice of them.
  dnnl::matmul::primitive_desc Describe(int64_t rows, const dnnl::memory::desc& weights) const {
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, weight_scales);  // per output column
    dnnl::post_ops activation_scale;
    activation_scale.append_binary(dnnl::algorithm::binary_mul,
                                   dnnl::memory::desc({1, 1}, dt::f32, tag::ab));
    attr.set_post_ops(activation_scale);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(dnnl::memory::desc({rows, in}, dt::u8, tag::ab), weights,
                           dnnl::memory::desc({1, out}, dt::f32, tag::ab),
                           dnnl::memory::desc({rows, out}, dt::f32, tag::ab)),
        attr, CpuEngine());
  }

  Built Build(int64_t rows) const {
    const dnnl::matmul::primitive_desc pd = Describe(rows, weights.desc);
    dnnl::primitive_attr quantize_attr;
    quantize_attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
    quantize_attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    const dnnl::reorder::primitive_desc quantize_pd(
        CpuEngine(), dnnl::memory::desc({rows, in}, dt::f32, tag::ab), CpuEngine(), pd.src_desc(),
        quantize_attr);
    return Built{pd, dnnl::matmul(pd), dnnl::reorder(quantize_pd)};
  }
};

Int8Matmul::Int8Matmul(const torch::Tensor& weight, const torch::Tensor& bias)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const torch::Tensor w = weight.to(torch::kFloat32).contiguous();
  s.out = w.size(0);
  s.in = w.size(1);
  s.weight_scales_tensor = (w.abs().amax(1) / 127.0).clamp_min(1e-12).contiguous();
  s.weight_scales.assign(s.weight_scales_tensor.data_ptr<float>(),
                         s.weight_scales_tensor.data_ptr<float>() + s.out);
  const torch::Tensor plain = (w / s.weight_scales_tensor.unsqueeze(1))
                                  .round()
                                  .clamp(-127, 127)
                                  .to(torch::kInt8)
                                  .t()
                                  .contiguous();
  s.weights = PackWeights([&](int64_t rows, const auto& desc) { return s.Describe(rows, desc); },
                          dnnl::memory::desc({s.in, s.out}, dt::s8, tag::ab), plain);
  s.bias = bias.defined() ? bias.to(torch::kFloat32).contiguous()
                          : torch::zeros({s.out}, torch::kFloat32);
  s.column_sums = plain.to(torch::kFloat64).sum(0).contiguous();
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
  slice->weight_scales_tensor = s.weight_scales_tensor.narrow(0, begin, count).contiguous();
  slice->bias = s.bias.narrow(0, begin, count).contiguous();
  slice->column_sums = s.column_sums.narrow(0, begin, count).contiguous();
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
  // Asymmetric uint8 over the call's range, widened to hold 0 so that zero stays exact.
  auto [lo, hi] = torch::aminmax(x);
  const float min = std::min(lo.item<float>(), 0.0f), max = std::max(hi.item<float>(), 0.0f);
  const double scale = max > min ? (static_cast<double>(max) - min) / 255.0 : 1.0;
  const int32_t zero_point =
      static_cast<int32_t>(std::clamp<double>(std::nearbyint(-min / scale), 0, 255));
  // oneDNN 2.x scales int8 results after adding the bias (measured: a zero input gave the bias
  // times the scale), so the bias goes in divided by the scales it will be multiplied by, less
  // the zero point's share of the integer products (in fp64, then rounded once: that share is
  // up to 255 x 127 x in).
  const torch::Tensor bias =
      (s.bias.to(torch::kFloat64) / (s.weight_scales_tensor.to(torch::kFloat64) * scale) -
       zero_point * s.column_sums)
          .to(torch::kFloat32)
          .contiguous();
  float activation_scale = static_cast<float>(scale);
  torch::Tensor result = torch::empty({rows, s.out}, torch::kFloat32);

  const auto& [pd, primitive, quantize] =
      s.by_rows.Get(rows, [&](int64_t n) { return s.Build(n); });
  const torch::Tensor scratch = Scratchpad(pd);
  int32_t zero_point_value = zero_point;
  const dnnl::engine& e = CpuEngine();
  dnnl::stream stream(e);
  torch::Tensor q = torch::empty({rows, s.in}, torch::kUInt8);
  const dnnl::memory quantized = AsMemory(pd.src_desc(), q);
  float inverse_scale = static_cast<float>(1.0 / scale);
  quantize.execute(
      stream,
      {{DNNL_ARG_FROM, dnnl::memory({{rows, s.in}, dt::f32, tag::ab}, e, x.data_ptr())},
       {DNNL_ARG_TO, quantized},
       {DNNL_ARG_ATTR_OUTPUT_SCALES, dnnl::memory({{1}, dt::f32, tag::a}, e, &inverse_scale)},
       {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
        dnnl::memory({{1}, dt::s32, tag::a}, e, &zero_point_value)}});
  primitive.execute(
      stream,
      {{DNNL_ARG_SRC, quantized},
       {DNNL_ARG_WEIGHTS, AsMemory(s.weights.desc, s.weights.data)},
       {DNNL_ARG_BIAS, dnnl::memory({{1, s.out}, dt::f32, tag::ab}, e, bias.data_ptr())},
       {DNNL_ARG_DST, dnnl::memory({{rows, s.out}, dt::f32, tag::ab}, e, result.data_ptr())},
       {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
        dnnl::memory({{1, 1}, dt::f32, tag::ab}, e, &activation_scale)},
       {DNNL_ARG_SCRATCHPAD, AsMemory(pd.scratchpad_desc(), scratch)}});
  stream.wait();
  return result;
}

}  // namespace embedding::model_store
