// Where the Hub is and how to talk to it, resolved once from flags and the environment the
// official clients read (HF_ENDPOINT, HF_TOKEN, HF_TOKEN_PATH, HF_HOME, HF_HUB_OFFLINE,
// HF_HUB_CACHE and friends), so one configuration serves this server and huggingface_hub.
#pragma once

#include <string>

#include "absl/time/time.h"

namespace embedding::model_store {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string cache_dir;
  bool offline = false;
  std::string token;      // sent to the endpoint's own host only; never logged
  std::string ca_bundle;  // extra trust roots (PEM) for TLS through a corporate proxy
  // A warm cache waits this long for the Hub before starting from the cache.
  absl::Duration warm_start_timeout = absl::Seconds(3);
};

// The flags win over the environment: `cache_dir_flag` (see ResolveHubCacheDir), `offline_flag`
// or HF_HUB_OFFLINE, `ca_bundle_flag` or CURL_CA_BUNDLE. The token is HF_TOKEN, else the first
// line of $HF_TOKEN_PATH (default $HF_HOME/token, HF_HOME defaulting to
// ~/.cache/huggingface).
HubSettings ResolveHubSettings(const std::string& cache_dir_flag, bool offline_flag,
                               const std::string& ca_bundle_flag);

}  // namespace embedding::model_store
