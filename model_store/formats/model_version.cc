#include "model_store/formats/model_version.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

// Version names in serving order: "10" after "9" (by length, then digits), strings otherwise.
bool OlderVersion(const std::string& a, const std::string& b) {
  if (AllDigits(a) && AllDigits(b) && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

std::string Signature(const fs::path& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    std::error_code stat_ec;
    if (!entry.is_regular_file(stat_ec)) continue;
    const auto size = entry.file_size(stat_ec);
    const auto mtime = entry.last_write_time(stat_ec).time_since_epoch().count();
    entries.push_back(absl::StrCat(entry.path().lexically_relative(dir).string(), ":", size, ":",
                                   static_cast<int64_t>(mtime)));
  }
  std::sort(entries.begin(), entries.end());
  return absl::StrCat(dir.string(), "\n", absl::StrJoin(entries, "\n"));
}

}  // namespace

absl::StatusOr<LocatedVersion> LocateModelVersion(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (fs::exists(root / "config.json", ec)) return LocatedVersion{dir, "", Signature(root)};
  std::string newest;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (fs::exists(entry.path() / "config.json") && (newest.empty() || OlderVersion(newest, name)))
      newest = name;
  }
  if (newest.empty()) {
    return absl::NotFoundError(absl::StrCat(
        dir, ": no config.json, and no version subdirectory holding one (<dir>/<version>/)"));
  }
  return LocatedVersion{(root / newest).string(), newest, Signature(root / newest)};
}

std::string ComputeModelVersion(const std::string& model_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Everything Model::Load reads that changes what a model computes, bge-m3's heads included.
    if (name == "config.json" || name == "tokenizer.json" || name == "vocab.txt" ||
        name == "tokenizer_config.json" || name == "tempscale.json" || name == "sparse_linear.pt" ||
        name == "colbert_linear.pt" || entry.path().extension() == ".safetensors") {
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
