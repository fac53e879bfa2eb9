#include "model_store/hub/hub_settings.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "common/command_line.h"
#include "model_store/hub/hub_cache.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

std::string TokenFromEnvironment() {
  if (std::string token = EnvironmentValue("HF_TOKEN"); !token.empty())
    return std::string(absl::StripAsciiWhitespace(token));
  std::string path = EnvironmentValue("HF_TOKEN_PATH");
  if (path.empty()) {
    std::string home = EnvironmentValue("HF_HOME");
    if (home.empty())
      home = (fs::path(EnvironmentValue("HOME")) / ".cache" / "huggingface").string();
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
  if (std::string endpoint = EnvironmentValue("HF_ENDPOINT"); !endpoint.empty()) {
    settings.endpoint = std::string(absl::StripSuffix(endpoint, "/"));
  }
  settings.cache_dir = ResolveHubCacheDir(cache_dir_flag);
  settings.offline = offline_flag || HubOfflineFromEnvironment();
  settings.token = TokenFromEnvironment();
  settings.ca_bundle = ca_bundle_flag.empty() ? EnvironmentValue("CURL_CA_BUNDLE") : ca_bundle_flag;
  return settings;
}

}  // namespace embedding::model_store
