// --dtype=auto's measurement, kept on disk so that it runs once per model version and CPU: a
// later start builds only the dtype it chose, so it starts as fast and holds as much memory as
// that dtype named on the command line would.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model_store/dtype/dtype_choice.h"

namespace embedding::model_store {

struct CachedDTypeChoice {
  ComputeDType chosen = ComputeDType::kFloat32;
  std::vector<DTypeTrial> trials;  // the figures that made the choice
  std::string path;                // the file it was read from
};

class DTypeChoiceCache {
 public:
  // `directory` empty: nothing is read or kept (every start measures).
  explicit DTypeChoiceCache(std::string directory) : directory_(std::move(directory)) {}

  // The file for `model_version` (a content hash) on this CPU (CpuIsa()), with this LibTorch
  // and `threads` intra-op threads (0: every core): a different CPU, library or thread count
  // measures again.
  std::string PathFor(const std::string& model_version, int threads) const;

  // nullopt when disabled, absent, or unreadable (a damaged file is measured again and
  // replaced, never trusted).
  std::optional<CachedDTypeChoice> Lookup(const std::string& model_version, int threads) const;

  // Written to a temporary file and renamed, so a reader never sees half a file. An error
  // names the path; the caller logs it and serves on.
  absl::Status Store(const std::string& model_version, int threads, ComputeDType chosen,
                     const std::vector<DTypeTrial>& trials) const;

  bool enabled() const { return !directory_.empty(); }

 private:
  std::string directory_;
};

}  // namespace embedding::model_store
