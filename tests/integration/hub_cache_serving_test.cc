// Models named by Hub repository id, served from a Hugging Face cache the test lays out as
// huggingface_hub does (blobs, relative symlinks in snapshots/<commit>, refs/main): the same
// vectors as the directory, the repository and commit in GetModelInfo, a moved ref served as a
// new version, and a clear start-up error for a model the cache lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kFirst[] = "1111111111111111111111111111111111111111";
constexpr char kSecond[] = "2222222222222222222222222222222222222222";

// Adds snapshots/<commit> holding every file of `model_dir` (plus `extra` files), each a
// relative symlink to a blob, and points refs/main at it (written to a temp file, renamed).
void AddSnapshot(const fs::path& repo, const std::string& commit, const std::string& model_dir,
                 const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  const fs::path snapshot = repo / "snapshots" / commit;
  int blob = 0;
  auto add = [&](const fs::path& relative, const std::string& bytes) {
    const std::string name = absl::StrCat(commit.substr(0, 4), "-", blob++);
    testing::WriteFile((repo / "blobs" / name).string(), bytes);
    fs::create_directories((snapshot / relative).parent_path());
    fs::path up;
    for (auto it = relative.begin(); std::next(it) != relative.end(); ++it) up /= "..";
    fs::create_symlink(fs::path("../..") / up / "blobs" / name, snapshot / relative);
  };
  for (const auto& entry : fs::recursive_directory_iterator(model_dir)) {
    if (!entry.is_regular_file()) continue;
    add(entry.path().lexically_relative(model_dir), testing::ReadFile(entry.path().string()));
  }
  for (const auto& [path, bytes] : extra) add(path, bytes);
  testing::WriteFile((repo / "refs" / "main.tmp").string(), commit);
  fs::rename(repo / "refs" / "main.tmp", repo / "refs" / "main");
}

TEST(HubCacheServing, ServesTheCachedSnapshotAndFollowsItsRef) {
  const fs::path cache = testing::MakeScratchDir("hub_cache");
  const fs::path repo = cache / "models--org--tiny";
  AddSnapshot(repo, kFirst, testing::TinyModelDir());
  testing::ServerProcess server({"--model=org/tiny", "--model=plain=" + testing::TinyModelDir(),
                                 "--hub-cache-dir=" + cache.string(), "--model-poll-interval-s=1",
                                 "--hub-offline"});
  ASSERT_TRUE(server.ok()) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr(absl::StrCat("model 'tiny' version")));
  EXPECT_THAT(server.Log(), HasSubstr(absl::StrCat("from org/tiny at main, commit ", kFirst)));
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  auto info = client->GetModelInfo("tiny");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->repository(), "org/tiny");
  EXPECT_EQ(info->revision(), "main");
  EXPECT_EQ(info->commit(), kFirst);
  EXPECT_EQ(client->GetModelInfo("plain")->repository(), "");

  client::EmbedOptions hub, plain;
  hub.model = "tiny";
  plain.model = "plain";
  auto a = client->EmbedTexts({"the cat sat on the mat"}, hub);
  auto b = client->EmbedTexts({"the cat sat on the mat"}, plain);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);

  // Another tool pulls a new commit: the ref moves, and the next poll serves it.
  AddSnapshot(repo, kSecond, testing::TinyModelDir(),
              {{"tempscale.json", R"({"schedule": {"form": "piecewise",
                  "points": [{"min_tokens": 0, "tau": 0.9}]}})"}});
  std::string commit;
  for (int i = 0; i < 150 && commit != kSecond; ++i) {
    absl::SleepFor(absl::Milliseconds(200));
    commit = client->GetModelInfo("tiny")->commit();
  }
  ASSERT_EQ(commit, kSecond) << server.Log();
  EXPECT_EQ(client->GetModelInfo("tiny")->tempscale_schedule().form(), "piecewise");
}

TEST(HubCacheServing, AModelTheCacheLacksIsAClearStartUpError) {
  const fs::path cache = testing::MakeScratchDir("hub_cache_empty");
  testing::ServerProcess server(
      {"--model=org/absent@v2", "--hub-cache-dir=" + cache.string(), "--hub-offline"});
  EXPECT_FALSE(server.ok());
  EXPECT_EQ(server.Wait(), 1);
  EXPECT_THAT(server.Log(),
              HasSubstr("model 'absent': org/absent at revision v2 is not in the Hugging Face "
                        "cache " +
                        cache.string()));
  EXPECT_THAT(server.Log(), HasSubstr("offline (HF_HUB_OFFLINE or --hub-offline), so nothing is "
                                      "downloaded: fill the cache first with `embedctl pull "
                                      "org/absent@v2`"));
}

}  // namespace
}  // namespace embedding
