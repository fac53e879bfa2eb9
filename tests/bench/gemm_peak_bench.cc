// This CPU's matrix-kernel rates on a BERT-base forward's own linear shapes, the ceiling an
// encoder's linear layers can reach here (issue 64's "share of peak"):
// - `kernel`: oneDNN's matmul alone, weights packed once in the layout it asks for, the
//   activations already in its input type (u8 for int8, bf16, fp32), fp32 out; int8 the
//   integer products alone, no scales in the primitive, as Int8Matmul builds it;
// - `layer`: the int8 linear layer the encoder runs (Int8Matmul::Apply: each row's scale,
//   quantization, the kernel, the pass applying the row and column scales and the bias), from
//   fp32 in to fp32 out.
// Args {rows, in, out}; the rate is the "ops" counter (2 x rows x in x out per call). The
// kernel's implementation name (brg:avx512_core_amx_int8, brg:avx512_core_vnni, ...) is the
// benchmark's label.
//   gemm_peak_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "model_store/kernels/cpu_features.h"
#include "model_store/kernels/int8_matmul.h"
#include "model_store/kernels/onednn_support.h"

namespace embedding::model_store {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

void SetOps(benchmark::State& state) {
  state.counters["ops"] =
      benchmark::Counter(2.0 * state.range(0) * state.range(1) * state.range(2),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Kernel(benchmark::State& state, dt type) {
  if (type == dt::bf16 && !CpuHasNativeBf16()) {
    state.SkipWithError("CPU has no native bf16");
    return;
  }
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const dt src_type = type == dt::s8 ? dt::u8 : type;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(dnnl::memory::desc({rows, in}, src_type, tag::ab),
                         dnnl::memory::desc({in, out}, type, tag::any),
                         dnnl::memory::desc({rows, out}, dt::f32, tag::ab)),
      attr, CpuEngine());
  state.SetLabel(pd.impl_info_str());
  // Bytes of the right size; their values do not change the kernels' speed.
  auto bytes = [](const dnnl::memory::desc& d) {
    return torch::randint(0, 100, {static_cast<int64_t>(d.get_size())}, torch::kUInt8);
  };
  const torch::Tensor src = bytes(pd.src_desc()), weights = bytes(pd.weights_desc()),
                      dst = bytes(pd.dst_desc()), scratch = Scratchpad(pd);
  const dnnl::matmul matmul(pd);
  dnnl::stream stream(CpuEngine());
  for (auto _ : state) {
    matmul.execute(stream, {{DNNL_ARG_SRC, AsMemory(pd.src_desc(), src)},
                            {DNNL_ARG_WEIGHTS, AsMemory(pd.weights_desc(), weights)},
                            {DNNL_ARG_DST, AsMemory(pd.dst_desc(), dst)},
                            {DNNL_ARG_SCRATCHPAD, AsMemory(pd.scratchpad_desc(), scratch)}});
    stream.wait();
  }
  SetOps(state);
}

void BM_Int8Layer(benchmark::State& state) {
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const Int8Matmul layer(torch::randn({out, in}) * 0.05, torch::randn({out}));
  const torch::Tensor x = torch::randn({rows, in});
  for (auto _ : state) benchmark::DoNotOptimize(layer.Apply(x));
  SetOps(state);
}

// BERT-base's four products (queries, keys and values together; attention's output; the
// feed-forward's two), at a short document, a full window and a batch of full windows.
void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t rows : {192, 512, 4096}) {
    for (auto [in, out] : {std::pair<int64_t, int64_t>{768, 2304},
                           {768, 768},
                           {768, 3072},
                           {3072, 768}}) {
      b->Args({rows, in, out});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_Kernel, int8, dt::s8)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Kernel, bf16, dt::bf16)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Kernel, fp32, dt::f32)->Apply(Shapes);
BENCHMARK(BM_Int8Layer)->Apply(Shapes);

}  // namespace
}  // namespace embedding::model_store

int main(int argc, char** argv) {
  torch::set_num_threads(2);  // the benches' two threads, as every peer gets
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
