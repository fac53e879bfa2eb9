#include "model_store/hub/hub_settings.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "model_store/hub/hub_cache.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string TokenFromEnvironment() {
  if (std::string token = Env("HF_TOKEN"); !token.empty())
    return std::string(absl::StripAsciiWhitespace(token));
  std::string path = Env("HF_TOKEN_PATH");
  if (path.empty()) {
    std::string home = Env("HF_HOME");
    if (home.empty()) home = (fs::path(Env("HOME")) / ".cache" / "huggingface").string();
    path = (fs::path(home) / "token").string();
  }
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return std::string(absl::StripAsciiWhitespace(token));
}

}  // namespace

HubSettings ResolveHubSettings(const std::string& cache_dir_flag, bool offline_flag,
                               const std::string& ca_bundle_flag) {
  HubSettings settings;
  if (std::string endpoint = Env("HF_ENDPOINT"); !endpoint.empty()) {
    settings.endpoint = std::string(absl::StripSuffix(endpoint, "/"));
  }
  settings.cache_dir = ResolveHubCacheDir(cache_dir_flag);
  settings.offline = offline_flag || HubOfflineFromEnvironment();
  settings.token = TokenFromEnvironment();
  settings.ca_bundle = ca_bundle_flag.empty() ? Env("CURL_CA_BUNDLE") : ca_bundle_flag;
  return settings;
}

}  // namespace embedding::model_store
