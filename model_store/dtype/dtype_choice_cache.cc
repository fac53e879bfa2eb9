#include "model_store/dtype/dtype_choice_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "model_store/formats/content_digest.h"
#include "model_store/kernels/cpu_features.h"
#include "nlohmann/json.hpp"
#include "torch/version.h"

namespace embedding::model_store {
namespace {

// Raised when what a trial measures changes, so old files are measured again. 2: int8
// quantises activations per row, not per batch (its accuracy and speed moved).
constexpr int kFormat = 2;

std::string Signature(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  return absl::StrCat(CpuIsa(), "; torch ", TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".",
                      TORCH_VERSION_PATCH, "; threads ", threads, "; format ", kFormat);
}

// A dtype a trial ran in: never auto, which only names the choice.
std::optional<ComputeDType> DTypeNamed(const std::string& name) {
  const std::optional<ComputeDType> dtype = ComputeDTypeNamed(name);
  if (dtype == ComputeDType::kAuto) return std::nullopt;
  return dtype;
}

}  // namespace

std::string DTypeChoiceCache::PathFor(const std::string& model_version, int threads) const {
  return absl::StrCat(directory_, "/dtype-choices/", model_version, "-",
                      Sha256Hex(Signature(threads)).substr(0, 16), ".json");
}

std::optional<CachedDTypeChoice> DTypeChoiceCache::Lookup(const std::string& model_version,
                                                          int threads) const {
  if (!enabled()) return std::nullopt;
  const std::string path = PathFor(model_version, threads);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  try {
    if (json.at("signature").get<std::string>() != Signature(threads) ||
        json.at("model_version").get<std::string>() != model_version)
      return std::nullopt;
    CachedDTypeChoice cached;
    cached.path = path;
    const auto chosen = DTypeNamed(json.at("chosen").get<std::string>());
    if (!chosen) return std::nullopt;
    cached.chosen = *chosen;
    for (const auto& item : json.at("trials")) {
      const auto dtype = DTypeNamed(item.at("dtype").get<std::string>());
      if (!dtype) return std::nullopt;
      DTypeTrial trial{*dtype};
      trial.unavailable = item.at("unavailable").get<std::string>();
      trial.min_cosine = item.at("min_cosine").get<double>();
      trial.tokens_per_second = item.at("tokens_per_second").get<double>();
      trial.passed = item.at("passed").get<bool>();
      cached.trials.push_back(std::move(trial));
    }
    return cached;
  } catch (const nlohmann::json::exception&) {  // discarded, missing or mistyped fields
    return std::nullopt;
  }
}

absl::Status DTypeChoiceCache::Store(const std::string& model_version, int threads,
                                     ComputeDType chosen,
                                     const std::vector<DTypeTrial>& trials) const {
  if (!enabled()) return absl::OkStatus();
  const std::string path = PathFor(model_version, threads);
  nlohmann::json json = {{"model_version", model_version},
                         {"signature", Signature(threads)},
                         {"chosen", ComputeDTypeName(chosen)},
                         {"trials", nlohmann::json::array()}};
  for (const DTypeTrial& trial : trials) {
    json["trials"].push_back({{"dtype", ComputeDTypeName(trial.dtype)},
                              {"unavailable", trial.unavailable},
                              {"min_cosine", trial.min_cosine},
                              {"tokens_per_second", trial.tokens_per_second},
                              {"passed", trial.passed}});
  }
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  const std::string temporary = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json.dump(2) << "\n";
    if (!out.flush()) {
      std::filesystem::remove(temporary, error);
      return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the dtype choice"));
    }
  }
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot write the dtype choice: ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace embedding::model_store
