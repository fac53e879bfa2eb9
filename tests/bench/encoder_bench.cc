// The bare forward pass: batches of full windows (1 x 512 and 8 x 512, P6) and one 128-token
// sequence (P5's denominator), in fp32, bf16 and int8 in the same run. Model from
// BENCH_MODEL_DIR (a BERT-base-shaped demo model unless the harness names another). Reports
// tokens/s as the "tokens" rate counter; args are {batch, length}.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <random>

#include "model_store/kernels/cpu_features.h"
#include "model_store/model.h"

namespace embedding::model_store {
namespace {

const Model* LoadModel(ComputeDType dtype) {
  const char* dir = std::getenv("BENCH_MODEL_DIR");
  if (dir == nullptr) return nullptr;
  ModelOptions options;
  options.encoder.dtype = dtype;
  // Two threads, as every peer gets; BENCH_THREADS=N for how the forward scales with them.
  const char* threads = std::getenv("BENCH_THREADS");
  options.encoder.intra_op_threads = threads != nullptr ? std::atoi(threads) : 2;
  auto model = Model::Load(dir, options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return nullptr;
  }
  return model->release();
}

void BM_Encode(benchmark::State& state, ComputeDType dtype) {
  if (dtype == ComputeDType::kBFloat16 && !CpuHasNativeBf16()) {
    state.SkipWithError("CPU has no native bf16");
    return;
  }
  static const Model* models[3] = {nullptr, nullptr, nullptr};
  const Model*& model = models[static_cast<int>(dtype)];
  if (model == nullptr) model = LoadModel(dtype);
  if (model == nullptr) {
    state.SkipWithError("set BENCH_MODEL_DIR to a model directory");
    return;
  }
  const int batch_size = static_cast<int>(state.range(0));
  const int length =
      std::min(static_cast<int>(state.range(1)),
               static_cast<int>(model->encoder().max_sequence_length()));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(5,
                                            static_cast<int32_t>(model->config().vocab_size - 1));
  EncodeBatch batch;
  batch.pooling = model->pooling();
  for (int b = 0; b < batch_size; ++b) {
    std::vector<int32_t> content(length - 2);
    for (auto& v : content) v = id(rng);
    batch.sequences.push_back(model->tokenizer().AddSpecialTokens(content));
    batch.temperatures.push_back(b % 2 ? 0.5f : 1.0f);
  }
  for (auto _ : state) {
    auto result = model->encoder().Encode(batch);
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
  state.counters["tokens"] = benchmark::Counter(static_cast<double>(batch_size) * length,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({1, 512})->Args({8, 512})->Args({1, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_Encode, fp32, ComputeDType::kFloat32)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Encode, bf16, ComputeDType::kBFloat16)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Encode, int8, ComputeDType::kInt8)->Apply(Shapes);

}  // namespace
}  // namespace embedding::model_store

BENCHMARK_MAIN();
