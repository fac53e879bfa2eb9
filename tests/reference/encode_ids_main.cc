// encode_ids: runs the C++ encoder on token ids read as JSON and prints its outputs as JSON,
// so tests/reference/compare_encoder.py can check them against PyTorch's own modules.
// Input:  {"sequences": [[ids...]...], "temperatures": [...], "pooling":
// "mean"|"cls"|"max"|"last_token", optionally "local_temperatures" and "adapters" (per sequence,
// -1 for none)} Output: {"dim": D, "pooled": [[...]], "hidden_states": [[...]],
// "high_frequency_ratio": [...]} All sequences go through one padded batch, so the comparison also
// covers batching.
#include <iostream>
#include <iterator>

#include "model_store/model.h"
#include "nlohmann/json.hpp"

using embedding::model_store::EncodeBatch;
using embedding::model_store::Model;
using embedding::model_store::PoolingMode;

int main(int argc, char** argv) {
  // --torch-ops: LibTorch's own ops, the path a GPU runs; --device=D and --dtype=T as the
  // server's flags.
  embedding::model_store::ModelOptions options;
  std::string model_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--torch-ops") {
      options.encoder.torch_ops = true;
    } else if (arg.rfind("--device=", 0) == 0) {
      const auto device = embedding::model_store::ResolveComputeDevice(arg.substr(9));
      if (!device.ok()) {
        std::cerr << device.status() << "\n";
        return 2;
      }
      options.encoder.device = *device;
    } else if (arg.rfind("--dtype=", 0) == 0 &&
               embedding::model_store::ComputeDTypeNamed(arg.substr(8))) {
      options.encoder.dtype = *embedding::model_store::ComputeDTypeNamed(arg.substr(8));
    } else if (model_dir.empty() && arg.rfind("--", 0) != 0) {
      model_dir = arg;
    } else {
      model_dir.clear();
      break;
    }
  }
  if (model_dir.empty()) {
    std::cerr << "usage: encode_ids [--torch-ops] [--device=D] [--dtype=T] MODEL_DIR < input.json"
                 " > output.json\n";
    return 2;
  }
  auto model = Model::Load(model_dir, options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  const std::string text(std::istreambuf_iterator<char>(std::cin), {});
  const auto input = nlohmann::json::parse(text);
  EncodeBatch batch;
  batch.sequences = input["sequences"].get<std::vector<std::vector<int32_t>>>();
  batch.temperatures = input["temperatures"].get<std::vector<float>>();
  batch.local_temperatures = input.value("local_temperatures", std::vector<float>());
  batch.adapters = input.value("adapters", std::vector<int32_t>());
  const std::string pooling = input.value("pooling", "mean");
  batch.pooling = pooling == "cls"          ? PoolingMode::kCls
                  : pooling == "max"        ? PoolingMode::kMax
                  : pooling == "last_token" ? PoolingMode::kLastToken
                                            : PoolingMode::kMean;
  batch.normalize = false;
  batch.return_hidden_states = true;
  auto result = (*model)->encoder().Encode(batch);
  if (!result.ok()) {
    std::cerr << result.status() << "\n";
    return 1;
  }
  nlohmann::json out = {{"dim", result->dim},
                        {"pooled", result->pooled},
                        {"hidden_states", result->hidden_states},
                        {"high_frequency_ratio", result->high_frequency_ratio}};
  std::cout << out.dump() << "\n";
  return 0;
}
