// Hub references and Hugging Face's cache layout: which ids are accepted (none that could leave
// the cache), where the cache is (flag and environment precedence), and how a reference finds
// its snapshot (refs, commits, corrupt refs, symlinks leading out).
#include "model_store/hub/hub_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "model_store/hub/hub_reference.h"
#include "model_store/hub/hub_settings.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kCommit[] = "5617a9f61b028005a4858fdac845db406aefb181";

TEST(HubReferenceTest, AcceptsRepositoryIdsWithOptionalRevisions) {
  auto plain = ParseHubReference("BAAI/bge-small-en-v1.5", "--model");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->repo, "BAAI/bge-small-en-v1.5");
  EXPECT_EQ(plain->revision, "main");
  auto pinned = ParseHubReference(std::string("BAAI/bge-m3@") + kCommit, "--model");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->revision, kCommit);
  EXPECT_TRUE(IsCommitHash(pinned->revision));
  auto single = ParseHubReference("gpt2@refs/pr/1", "--model");
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->repo, "gpt2");
  EXPECT_EQ(single->revision, "refs/pr/1");
  EXPECT_FALSE(IsCommitHash("main"));
  EXPECT_FALSE(IsCommitHash("5617A9F61B028005A4858FDAC845DB406AEFB181"));
}

TEST(HubReferenceTest, RefusesWhatCouldLeaveTheCacheNamingTheRule) {
  const std::pair<const char*, const char*> cases[] = {
      {"../etc", "\"..\" and \"--\" are not allowed"},
      {"org/..", "\"..\" and \"--\" are not allowed"},
      {"org--x/name", "\"..\" and \"--\" are not allowed"},
      {"/abs", "an empty part (or an absolute path)"},
      {"a/b/c", "more than one '/'"},
      {"org/name.git", "a trailing \".git\""},
      {"org/na me", "characters outside [A-Za-z0-9_.-]"},
      {"org/näme", "characters outside [A-Za-z0-9_.-]"},
      {".hidden/x", "may not start with '.' or '-'"},
      {"org/name@", "empty revision"},
      {"org/name@../../x", "may not hold \"..\""},
      {"org/name@/abs", "may not hold \"..\" or start or end with '/'"},
      {"org/name@a b", "a revision holds only"},
  };
  for (const auto& [text, why] : cases) {
    auto parsed = ParseHubReference(text, "--model");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--model: ")) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(why)) << text;
  }
}

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, std::string>> values) {
    for (const char* name :
         {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME",
          "HF_HUB_OFFLINE", "HF_ENDPOINT", "HF_TOKEN", "HF_TOKEN_PATH", "CURL_CA_BUNDLE"}) {
      const char* old = getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name, value->c_str(), 1);
      else
        unsetenv(name);
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(HubCacheTest, CacheDirectoryPrecedence) {
  {
    ScopedEnv env({{"HF_HUB_CACHE", "/a"},
                   {"HUGGINGFACE_HUB_CACHE", "/b"},
                   {"HF_HOME", "/c"},
                   {"XDG_CACHE_HOME", "/d"},
                   {"HOME", "/e"}});
    EXPECT_EQ(ResolveHubCacheDir("/flag"), "/flag");
    EXPECT_EQ(ResolveHubCacheDir(""), "/a");
  }
  {
    ScopedEnv env({{"HUGGINGFACE_HUB_CACHE", "/b"}, {"HF_HOME", "/c"}, {"HOME", "/e"}});
    EXPECT_EQ(ResolveHubCacheDir(""), "/b");
  }
  {
    ScopedEnv env({{"HF_HOME", "/c"}, {"XDG_CACHE_HOME", "/d"}, {"HOME", "/e"}});
    EXPECT_EQ(ResolveHubCacheDir(""), "/c/hub");
  }
  {
    ScopedEnv env({{"XDG_CACHE_HOME", "/d"}, {"HOME", "/e"}});
    EXPECT_EQ(ResolveHubCacheDir(""), "/d/huggingface/hub");
  }
  {
    ScopedEnv env({{"HOME", "/e"}});
    EXPECT_EQ(ResolveHubCacheDir(""), "/e/.cache/huggingface/hub");
  }
}

TEST(HubSettingsTest, EndpointTokenAndTrustFromFlagsThenEnvironment) {
  const std::string home = testing::MakeScratchDir("hub_settings_home");
  testing::WriteFile(home + "/token", "hf_fromHomeFile\n");
  testing::WriteFile(home + "/other_token", "  hf_fromTokenPath  \n");
  {
    ScopedEnv env({{"HF_ENDPOINT", "http://mirror.internal:8080/"},
                   {"HF_TOKEN", "hf_fromEnv"},
                   {"HF_HOME", home},
                   {"CURL_CA_BUNDLE", "/env-ca.pem"}});
    const HubSettings settings = ResolveHubSettings("", false, "");
    EXPECT_EQ(settings.endpoint, "http://mirror.internal:8080");
    EXPECT_EQ(settings.token, "hf_fromEnv");
    EXPECT_EQ(settings.ca_bundle, "/env-ca.pem");
    EXPECT_EQ(settings.cache_dir, home + "/hub");
    EXPECT_FALSE(settings.offline);
    EXPECT_EQ(ResolveHubSettings("", true, "/flag-ca.pem").ca_bundle, "/flag-ca.pem");
    EXPECT_TRUE(ResolveHubSettings("", true, "").offline);
  }
  {
    ScopedEnv env({{"HF_HOME", home}, {"HF_TOKEN_PATH", home + "/other_token"}});
    EXPECT_EQ(ResolveHubSettings("", false, "").token, "hf_fromTokenPath");
    EXPECT_EQ(ResolveHubSettings("", false, "").endpoint, "https://huggingface.co");
  }
  {
    ScopedEnv env({{"HF_HOME", home}});
    EXPECT_EQ(ResolveHubSettings("", false, "").token, "hf_fromHomeFile");
  }
  {
    ScopedEnv env({{"HOME", home}});  // ~/.cache/huggingface/token: none there
    EXPECT_EQ(ResolveHubSettings("", false, "").token, "");
  }
}

TEST(HubCacheTest, OfflineIsTruthyOnly) {
  for (const char* yes : {"1", "ON", "yes", "True"}) {
    ScopedEnv env({{"HF_HUB_OFFLINE", yes}});
    EXPECT_TRUE(HubOfflineFromEnvironment()) << yes;
  }
  for (const char* no : {"0", "off", "", "2"}) {
    ScopedEnv env({{"HF_HUB_OFFLINE", no}});
    EXPECT_FALSE(HubOfflineFromEnvironment()) << no;
  }
}

// A cache holding "org/tiny" at kCommit, refs/main pointing to it, files as relative symlinks
// into blobs/ as huggingface_hub writes them.
std::string MakeCache(const std::string& name) {
  const fs::path cache = testing::MakeScratchDir(name);
  const fs::path repo = cache / "models--org--tiny";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / kCommit);
  testing::WriteFile((repo / "blobs" / "abc123").string(), "{}");
  fs::create_symlink("../../blobs/abc123", repo / "snapshots" / kCommit / "config.json");
  testing::WriteFile((repo / "refs" / "main").string(), kCommit);
  return cache.string();
}

TEST(HubCacheTest, ARefLeadsToItsSnapshotAndACommitNeedsNoRef) {
  const std::string cache = MakeCache("hub_cache_found");
  EXPECT_EQ(RepoFolderName("org/tiny"), "models--org--tiny");
  auto by_ref = FindCachedSnapshot(cache, {"org/tiny", "main"});
  ASSERT_TRUE(by_ref.ok()) << by_ref.status();
  EXPECT_EQ(by_ref->commit, kCommit);
  EXPECT_EQ(by_ref->directory, cache + "/models--org--tiny/snapshots/" + kCommit);
  auto by_commit = FindCachedSnapshot(cache, {"org/tiny", kCommit});
  ASSERT_TRUE(by_commit.ok());
  EXPECT_EQ(by_commit->directory, by_ref->directory);
}

TEST(HubCacheTest, MissingAndCorruptEntriesSayWhatAndWhere) {
  const std::string cache = MakeCache("hub_cache_missing");
  auto branch = FindCachedSnapshot(cache, {"org/tiny", "dev"});
  EXPECT_EQ(branch.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(branch.status().message(),
              HasSubstr("org/tiny at revision dev is not in the Hugging Face cache " + cache));
  EXPECT_THAT(branch.status().message(), HasSubstr("refs/dev"));
  auto repo = FindCachedSnapshot(cache, {"org/other", "main"});
  EXPECT_EQ(repo.status().code(), absl::StatusCode::kNotFound);
  auto commit = FindCachedSnapshot(cache, {"org/tiny", "0000000000000000000000000000000000000000"});
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(commit.status().message(), HasSubstr("snapshots/0000000000"));

  testing::WriteFile(cache + "/models--org--tiny/refs/main", "not-a-commit\n");
  auto corrupt = FindCachedSnapshot(cache, {"org/tiny", "main"});
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.status().message(), HasSubstr("\"not-a-commit\" is not a 40-hex commit"));
}

TEST(HubCacheTest, ASymlinkLeadingOutOfTheRepositoryIsRefused) {
  const std::string cache = MakeCache("hub_cache_escape");
  const fs::path snapshot = fs::path(cache) / "models--org--tiny" / "snapshots" / kCommit;
  fs::create_symlink("/etc/passwd", snapshot / "tokenizer.json");
  auto found = FindCachedSnapshot(cache, {"org/tiny", "main"});
  EXPECT_EQ(found.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(found.status().message(), HasSubstr("tokenizer.json: a symlink leading outside"));
  fs::remove(snapshot / "tokenizer.json");
  fs::create_symlink("../../../models--org--other/blobs/x", snapshot / "tokenizer.json");
  EXPECT_EQ(FindCachedSnapshot(cache, {"org/tiny", "main"}).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace embedding::model_store
