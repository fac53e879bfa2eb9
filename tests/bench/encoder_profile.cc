// One forward pass under LibTorch's profiler, for a per-op account of where the time goes:
//   encoder_profile MODEL_DIR DTYPE BATCH LENGTH TRACE.json
// Writes a Chrome trace of the ops the calling thread ran (tests/bench/op_profile.py sums it).
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "model_store/model.h"

using embedding::model_store::ComputeDType;
using embedding::model_store::ComputeDTypeName;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: encoder_profile MODEL_DIR fp32|bf16|int8 BATCH LENGTH TRACE.json\n";
    return 2;
  }
  embedding::model_store::ModelOptions options;
  bool known = false;
  for (auto dtype : {ComputeDType::kFloat32, ComputeDType::kBFloat16, ComputeDType::kInt8}) {
    if (std::string(argv[2]) == ComputeDTypeName(dtype)) {
      options.encoder.dtype = dtype;
      known = true;
    }
  }
  if (!known) {
    std::cerr << "dtype " << argv[2] << ": allowed fp32, bf16, int8\n";
    return 2;
  }
  options.encoder.intra_op_threads = 2;
  auto model = embedding::model_store::Model::Load(argv[1], options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  const int batch_size = std::atoi(argv[3]);
  const int length = std::atoi(argv[4]);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(5, (*model)->config().vocab_size - 1);
  embedding::model_store::EncodeBatch batch;
  for (int b = 0; b < batch_size; ++b) {
    std::vector<int32_t> ids(length);
    for (auto& v : ids) v = id(rng);
    batch.sequences.push_back(ids);
    batch.temperatures.push_back(1.0f);
  }
  for (int warm = 0; warm < 2; ++warm) (void)(*model)->encoder().Encode(batch);
  {
    const std::string trace_path = argv[5];
    torch::autograd::profiler::RecordProfile profile(trace_path);
    auto result = (*model)->encoder().Encode(batch);
    if (!result.ok()) {
      std::cerr << result.status() << "\n";
      return 1;
    }
  }
  return 0;
}
