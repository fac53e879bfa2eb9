#include "model_store/model_version.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_format.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void Mix(uint64_t* hash, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    *hash ^= static_cast<unsigned char>(data[i]);
    *hash *= kFnvPrime;
  }
}

}  // namespace

std::string ComputeModelVersion(const std::string& model_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || name == "tokenizer.json" || name == "vocab.txt" ||
        name == "tokenizer_config.json" || entry.path().extension() == ".safetensors") {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  uint64_t hash = kFnvOffset;
  std::vector<char> buffer(1 << 20);
  for (const auto& name : names) {
    Mix(&hash, name.data(), name.size());
    std::ifstream in(fs::path(model_dir) / name, std::ios::binary);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      Mix(&hash, buffer.data(), static_cast<size_t>(in.gcount()));
    }
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace embedding::model_store
