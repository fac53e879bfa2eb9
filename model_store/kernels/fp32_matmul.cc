#include "model_store/kernels/fp32_matmul.h"

#include "model_store/kernels/onednn_support.h"

namespace embedding::model_store {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Fp32Matmul::State {
  int64_t in = 0, out = 0;
  MatmulWeights weights;
  torch::Tensor bias;  // [1, out] fp32
  struct Built {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul primitive;
  };
  PrimitiveCache<Built> by_rows;

  dnnl::matmul::primitive_desc Describe(int64_t rows, const dnnl::memory::desc& weights) const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(dnnl::memory::desc({rows, in}, dt::f32, tag::ab), weights,
                           dnnl::memory::desc({1, out}, dt::f32, tag::ab),
                           dnnl::memory::desc({rows, out}, dt::f32, tag::ab)),
        attr, CpuEngine());
  }
};

Fp32Matmul::Fp32Matmul(const torch::Tensor& weight, const torch::Tensor& bias)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const torch::Tensor w = weight.to(torch::kFloat32).contiguous();
  s.out = w.size(0);
  s.in = w.size(1);
  s.bias = bias.defined() ? bias.to(torch::kFloat32).reshape({1, s.out}).contiguous()
                          : torch::zeros({1, s.out}, torch::kFloat32);
  // The [out, in] rows read as the [in, out] matrix the matmul multiplies by.
  s.weights = PackWeights([&](int64_t rows, const auto& desc) { return s.Describe(rows, desc); },
                          dnnl::memory::desc({s.in, s.out}, dt::f32, {1, s.in}), w);
}

Fp32Matmul::Fp32Matmul(std::unique_ptr<State> state) : state_(std::move(state)) {}

Fp32Matmul::~Fp32Matmul() = default;

std::shared_ptr<const PackedLinear> Fp32Matmul::Columns(int64_t begin, int64_t count) const {
  auto slice = std::make_unique<State>();
  slice->in = state_->in;
  slice->out = count;
  slice->bias = state_->bias.narrow(1, begin, count).contiguous();
  std::optional<MatmulWeights> weights =
      SliceColumns(state_->weights, begin, count,
                   [&](int64_t rows, const auto& desc) { return slice->Describe(rows, desc); });
  if (!weights) return nullptr;
  slice->weights = *std::move(weights);
  return std::shared_ptr<const Fp32Matmul>(new Fp32Matmul(std::move(slice)));
}

size_t Fp32Matmul::primitives() const { return state_->by_rows.size(); }

bool Fp32Matmul::packed() const { return state_->weights.packed; }

torch::Tensor Fp32Matmul::Apply(const torch::Tensor& x_in) const {
  const State& s = *state_;
  const torch::Tensor x = x_in.to(torch::kFloat32).contiguous();
  const int64_t rows = x.size(0);
  const auto& [pd, primitive] = s.by_rows.Get(rows, [&](int64_t n) {
    auto described = s.Describe(n, s.weights.desc);
    return State::Built{described, dnnl::matmul(described)};
  });
  torch::Tensor result = torch::empty({rows, s.out}, torch::kFloat32);
  const torch::Tensor scratch = Scratchpad(pd);
  dnnl::stream stream(CpuEngine());
  primitive.execute(stream, {{DNNL_ARG_SRC, AsMemory(pd.src_desc(), x)},
                             {DNNL_ARG_WEIGHTS, AsMemory(s.weights.desc, s.weights.data)},
                             {DNNL_ARG_BIAS, AsMemory(pd.bias_desc(), s.bias)},
                             {DNNL_ARG_DST, AsMemory(pd.dst_desc(), result)},
                             {DNNL_ARG_SCRATCHPAD, AsMemory(pd.scratchpad_desc(), scratch)}});
  stream.wait();
  return result;
}

}  // namespace embedding::model_store
