#include "model_store/hub/hub_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/command_line.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

// Every symlink under the snapshot must land inside the repository's folder.
absl::Status CheckSnapshotLinks(const fs::path& snapshot, const fs::path& repo_folder) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(repo_folder, ec);
  for (auto it = fs::recursive_directory_iterator(snapshot, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_symlink(ec)) continue;
    // The link's own target first: weakly_canonical leaves a dangling link unresolved.
    fs::path target = fs::read_symlink(it->path(), ec);
    if (target.is_relative()) target = it->path().parent_path() / target;
    target = fs::weakly_canonical(target, ec);
    const fs::path relative = target.lexically_relative(root);
    if (ec || relative.empty() || *relative.begin() == "..") {
      return absl::DataLossError(absl::StrCat(it->path().string(), ": a symlink leading outside ",
                                              repo_folder.string(), " (to ", target.string(),
                                              "); refusing to load from this cache entry"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ResolveHubCacheDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (std::string dir = EnvironmentValue(name); !dir.empty()) return dir;
  if (std::string home = EnvironmentValue("HF_HOME"); !home.empty())
    return (fs::path(home) / "hub").string();
  if (std::string xdg = EnvironmentValue("XDG_CACHE_HOME"); !xdg.empty())
    return (fs::path(xdg) / "huggingface" / "hub").string();
  return (fs::path(EnvironmentValue("HOME")) / ".cache" / "huggingface" / "hub").string();
}

bool HubOfflineFromEnvironment() {
  const std::string value = absl::AsciiStrToUpper(EnvironmentValue("HF_HUB_OFFLINE"));
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

std::string RepoFolderName(const std::string& repo) {
  return absl::StrCat("models--", absl::StrReplaceAll(repo, {{"/", "--"}}));
}

absl::StatusOr<CachedSnapshot> FindCachedSnapshot(const std::string& cache_dir,
                                                  const HubReference& reference) {
  const fs::path folder = fs::path(cache_dir) / RepoFolderName(reference.repo);
  const std::string what = absl::StrCat(reference.repo, " at revision ", reference.revision,
                                        " is not in the ", "Hugging Face cache ", cache_dir);
  CachedSnapshot out;
  if (IsCommitHash(reference.revision)) {
    out.commit = reference.revision;
  } else {
    const fs::path ref = folder / "refs" / reference.revision;
    std::ifstream in(ref);
    if (!in) return absl::NotFoundError(absl::StrCat(what, " (no ", ref.string(), ")"));
    std::getline(in, out.commit);
    out.commit = std::string(absl::StripAsciiWhitespace(out.commit));
    if (!IsCommitHash(out.commit)) {
      return absl::DataLossError(absl::StrCat(ref.string(), ": \"", out.commit.substr(0, 64),
                                              "\" is not a 40-hex commit"));
    }
  }
  const fs::path snapshot = folder / "snapshots" / out.commit;
  std::error_code ec;
  if (!fs::is_directory(snapshot, ec))
    return absl::NotFoundError(absl::StrCat(what, " (no ", snapshot.string(), ")"));
  if (absl::Status links = CheckSnapshotLinks(snapshot, folder); !links.ok()) return links;
  out.directory = snapshot.string();
  return out;
}

}  // namespace embedding::model_store
