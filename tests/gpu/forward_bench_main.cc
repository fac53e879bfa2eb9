// forward_bench: the bare forward pass, timed on any device: a batch of B random sequences of L
// tokens (special tokens included, tau alternating 1 and 0.5 as TempScale per sequence), one
// warm-up pass, then N passes. Prints one JSON line: tokens/s, ms per pass and, on a CUDA
// device, what a pass allocated beyond the weights at its peak. A plain main, as a GPU machine
// has no google-benchmark (tests/gpu/build_and_check.sh runs it beside PyTorch's figures).
//
// usage: forward_bench MODEL_DIR [--device=D] [--dtype=T] [--batch=B] [--tokens=L] [--passes=N]
//                      [--torch-ops]
#include <chrono>
#include <iostream>
#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "model_store/kernels/torch_compat.h"
#include "model_store/model.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

int Run(int argc, char** argv) {
  ModelOptions options;
  std::string model_dir;
  int64_t batch_size = 1, tokens = 512, passes = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* flag, int64_t* out) {
      const std::string prefix = std::string(flag) + "=";
      return arg.rfind(prefix, 0) == 0 && absl::SimpleAtoi(arg.substr(prefix.size()), out) &&
             *out > 0;
    };
    if (value("--batch", &batch_size) || value("--tokens", &tokens) || value("--passes", &passes)) {
      continue;
    }
    if (arg == "--torch-ops") {
      options.encoder.torch_ops = true;
    } else if (arg.rfind("--device=", 0) == 0) {
      const auto device = ResolveComputeDevice(arg.substr(9));
      if (!device.ok()) {
        std::cerr << device.status() << "\n";
        return 2;
      }
      options.encoder.device = *device;
    } else if (arg.rfind("--dtype=", 0) == 0 && ComputeDTypeNamed(arg.substr(8))) {
      options.encoder.dtype = *ComputeDTypeNamed(arg.substr(8));
    } else if (model_dir.empty() && arg.rfind("--", 0) != 0) {
      model_dir = arg;
    } else {
      std::cerr << "forward_bench: unknown argument " << arg << "\n";
      return 2;
    }
  }
  if (model_dir.empty()) {
    std::cerr << "usage: forward_bench MODEL_DIR [--device=D] [--dtype=T] [--batch=B] "
                 "[--tokens=L] [--passes=N] [--torch-ops]\n";
    return 2;
  }
  const int device = options.encoder.device.index;
  auto model = Model::Load(model_dir, options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  const Encoder& encoder = (*model)->encoder();
  tokens = std::min(tokens, encoder.max_sequence_length());
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(5,
                                            static_cast<int32_t>(encoder.config().vocab_size - 1));
  EncodeBatch batch;
  batch.pooling = (*model)->pooling();
  for (int64_t b = 0; b < batch_size; ++b) {
    std::vector<int32_t> content(tokens - 2);
    for (int32_t& v : content) v = id(rng);
    batch.sequences.push_back((*model)->tokenizer().AddSpecialTokens(content));
    batch.temperatures.push_back(b % 2 ? 0.5f : 1.0f);
  }
  const int64_t weights = DeviceMemoryOf(device).allocated_bytes;
  ResetPeakDeviceMemory(device);
  double seconds = 0;
  for (int64_t pass = -1; pass < passes; ++pass) {  // pass -1 warms up
    const auto start = std::chrono::steady_clock::now();
    const auto result = encoder.Encode(batch);
    SynchronizeDevice(device);
    if (!result.ok()) {
      std::cerr << result.status() << "\n";
      return 1;
    }
    if (pass >= 0) {
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  int64_t sequence_tokens = 0;
  for (const auto& sequence : batch.sequences) sequence_tokens += sequence.size();
  const nlohmann::json line = {
      {"device", ComputeDeviceName(encoder.device())},
      {"dtype", ComputeDTypeName(encoder.dtype())},
      {"batch", batch_size},
      {"tokens", tokens},
      {"ms_per_pass", 1e3 * seconds / passes},
      {"tokens_per_s", static_cast<double>(sequence_tokens * passes) / seconds},
      {"weights_bytes", weights},
      {"peak_beyond_weights_bytes", DeviceMemoryOf(device).peak_allocated_bytes - weights}};
  std::cout << line.dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace embedding::model_store

int main(int argc, char** argv) { return embedding::model_store::Run(argc, argv); }
