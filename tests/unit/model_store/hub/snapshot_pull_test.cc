// The Hub downloader in process, behind a Hub held in memory (FakeHub) that stands in for
// libcurl: revisions, HEAD and GET of resolve URLs, large files redirected to another origin,
// Range requests, and the faults a test switches on (a dropped connection, a server that
// ignores Range, corrupt bytes, a Hub that is down). Checked: the cache's layout and bytes, the
// token going to the Hub's origin only, resume from the bytes kept, corrupt bytes leaving
// nothing behind, a moved branch followed (and unchanged files not fetched again), a Hub that
// is down starting from the cached commit, and offline pulls making no request.
#include "model_store/hub/snapshot_pull.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kHub[] = "https://hub.test";
constexpr char kCdn[] = "https://cdn.test";
constexpr char kRepo[] = "org/model";
constexpr char kToken[] = "hf_not_a_real_token";
constexpr char kWeights[] = "model.safetensors";

std::string Hex(const unsigned char* digest, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) absl::StrAppend(&out, absl::Hex(digest[i], absl::kZeroPad2));
  return out;
}

// The digests the Hub announces: SHA-256 for a large file, git's blob SHA-1 otherwise.
std::string Sha256(const std::string& bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return Hex(digest, sizeof(digest));
}
std::string GitBlobSha1(const std::string& bytes) {
  const std::string object = absl::StrCat("blob ", bytes.size(), std::string(1, '\0'), bytes);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(object.data()), object.size(), digest);
  return Hex(digest, sizeof(digest));
}

std::string Commit(char c) { return std::string(40, c); }

// A Hub in memory. One repository; large files live on another origin (the CDN).
struct FakeHub {
  std::map<std::string, std::map<std::string, std::string>> commits;  // commit -> path -> bytes
  std::map<std::string, std::string> refs;                           // branch -> commit
  std::set<std::string> large = {kWeights};
  // Faults, each for the next GET of `fault_path` only.
  std::string fault_path;
  size_t drop_after = std::string::npos;  // the connection resets after this many bytes
  bool ignore_range = false;              // and the retry gets the whole file again
  bool corrupt = false;                   // one byte flipped
  bool down = false;                      // every request fails to connect
  std::vector<HttpRequest> requests;

  void Publish(const std::string& branch, const std::string& commit,
               std::map<std::string, std::string> files) {
    commits[commit] = std::move(files);
    refs[branch] = commit;
  }

  absl::StatusOr<HttpResponse> Answer(const HttpRequest& request, const BodySink* sink) {
    requests.push_back(request);
    if (down) return absl::UnavailableError(absl::StrCat(request.url, ": connection refused"));
    const std::string revision_prefix = absl::StrCat(kHub, "/api/models/", kRepo, "/revision/");
    if (absl::StartsWith(request.url, revision_prefix))
      return Revision(request.url.substr(revision_prefix.size()));
    const std::string resolve_prefix = absl::StrCat(kHub, "/", kRepo, "/resolve/");
    if (absl::StartsWith(request.url, resolve_prefix)) {
      const std::vector<std::string> parts =
          absl::StrSplit(request.url.substr(resolve_prefix.size()), absl::MaxSplits('/', 1));
      return Resolve(request, parts[0], parts[1], sink);
    }
    if (absl::StartsWith(request.url, kCdn)) {
      const std::string sha = request.url.substr(std::string(kCdn).size() + 1);
      for (const auto& [commit, files] : commits)
        for (const auto& [path, bytes] : files)
          if (Sha256(bytes) == sha) return Body(request, path, bytes, sink);
    }
    return HttpResponse{404, {}, "", ""};
  }

 private:
  HttpResponse Revision(std::string revision) {
    revision = revision.substr(0, revision.find('?'));
    const std::string commit = refs.count(revision) ? refs[revision] : revision;
    if (!commits.count(commit))
      return HttpResponse{404, {{"x-error-code", "RevisionNotFound"}}, "", ""};
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [path, bytes] : commits[commit]) {
      nlohmann::json file = {{"rfilename", path}, {"size", bytes.size()}};
      if (large.count(path)) file["lfs"] = {{"sha256", Sha256(bytes)}, {"size", bytes.size()}};
      siblings.push_back(file);
    }
    return HttpResponse{200, {}, nlohmann::json({{"sha", commit}, {"siblings", siblings}}).dump(),
                        ""};
  }

  absl::StatusOr<HttpResponse> Resolve(const HttpRequest& request, const std::string& commit,
                                       const std::string& path, const BodySink* sink) {
    if (!commits.count(commit) || !commits[commit].count(path))
      return HttpResponse{404, {{"x-error-code", "EntryNotFound"}}, "", ""};
    const std::string& bytes = commits[commit][path];
    std::map<std::string, std::string> headers = {{"x-repo-commit", commit}};
    if (large.count(path)) {  // the Hub redirects to the large-file store
      headers["x-linked-etag"] = absl::StrCat("\"", Sha256(bytes), "\"");
      headers["x-linked-size"] = std::to_string(bytes.size());
      return HttpResponse{302, headers, "", absl::StrCat(kCdn, "/", Sha256(bytes))};
    }
    if (request.method == "HEAD") {
      headers["etag"] = absl::StrCat("W/\"", GitBlobSha1(bytes), "\"");
      headers["content-length"] = std::to_string(bytes.size());
      return HttpResponse{200, headers, "", ""};
    }
    return Body(request, path, bytes, sink);
  }

  absl::StatusOr<HttpResponse> Body(const HttpRequest& request, const std::string& path,
                                    std::string bytes, const BodySink* sink) {
    const bool faulty = path == fault_path;
    if (faulty && corrupt) bytes[bytes.size() / 2] ^= 0x20;
    const size_t start =
        request.range_start > 0 && !(faulty && ignore_range) ? request.range_start : 0;
    HttpResponse head{start > 0 ? 206 : 200, {}, "", ""};
    if (start > 0) {
      head.headers["content-range"] =
          absl::StrCat("bytes ", start, "-", bytes.size() - 1, "/", bytes.size());
    }
    std::string body = bytes.substr(start);
    const bool drop = faulty && drop_after < body.size();
    if (drop) {
      body.resize(drop_after);
      drop_after = std::string::npos;  // once
    }
    if (sink == nullptr) {
      head.body = body;
      return head;
    }
    if (!body.empty()) {
      absl::Status taken = (*sink)(head, body.data(), body.size());
      if (!taken.ok()) return taken;
    }
    if (drop) return absl::UnavailableError(absl::StrCat(request.url, ": connection reset"));
    return head;
  }
};

class FakeHubClient : public HttpClient {
 public:
  explicit FakeHubClient(FakeHub* hub) : HttpClient(HttpClientOptions{}), hub_(hub) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request, const BodySink* sink,
                                    size_t) override {
    return hub_->Answer(request, sink);
  }

 private:
  FakeHub* hub_;
};

class Notes : public DownloadProgress {
 public:
  void FileStarted(const std::string&, int64_t, int64_t) override {}
  void FileAdvanced(int64_t) override {}
  void FileFinished(const absl::Status&) override {}
  void Note(const std::string& message) override { notes.push_back(message); }
  std::vector<std::string> notes;
};

std::string Bytes(size_t n, uint32_t seed) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((seed = seed * 1103515245 + 12345) >> 16);
  return out;
}

std::string ReadAll(const fs::path& path) { return testing::ReadFile(path.string()); }

class SnapshotPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings_.endpoint = kHub;
    settings_.token = kToken;
    settings_.cache_dir = testing::MakeScratchDir("hub_cache");
    files_ = {{"config.json", R"({"model_type": "bert"})"},
              {"tokenizer.json", R"({"model": {"type": "WordPiece"}})"},
              {kWeights, Bytes(20000, 7)}};
    hub_.Publish("main", Commit('a'), files_);
  }

  absl::StatusOr<CachedSnapshot> Pull(const std::string& revision = "main") {
    return PullSnapshot(HubReference{kRepo, revision}, settings_, &notes_,
                        [this](const HttpClientOptions&) {
                          return std::make_unique<FakeHubClient>(&hub_);
                        });
  }

  fs::path Folder() const { return fs::path(settings_.cache_dir) / "models--org--model"; }

  void ExpectSnapshotHolds(const CachedSnapshot& snapshot, const std::string& commit,
                           const std::map<std::string, std::string>& files) {
    EXPECT_EQ(snapshot.commit, commit);
    EXPECT_EQ(fs::path(snapshot.directory), Folder() / "snapshots" / commit);
    for (const auto& [path, bytes] : files)
      EXPECT_EQ(ReadAll(fs::path(snapshot.directory) / path), bytes) << path;
    EXPECT_EQ(ReadAll(Folder() / "refs" / "main"), commit);
  }

  size_t Gets() const {
    size_t n = 0;
    for (const auto& r : hub_.requests) n += r.method == "GET" && !absl::StrContains(r.url, "/api/");
    return n;
  }

  FakeHub hub_;
  HubSettings settings_;
  Notes notes_;
  std::map<std::string, std::string> files_;
};

TEST_F(SnapshotPullTest, PullsTheModelAndTheTokenGoesOnlyToTheHub) {
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ExpectSnapshotHolds(*snapshot, Commit('a'), files_);
  // Blobs under their announced digests, as Hugging Face's cache keeps them.
  EXPECT_TRUE(fs::is_regular_file(Folder() / "blobs" / Sha256(files_[kWeights])));
  EXPECT_TRUE(fs::is_regular_file(Folder() / "blobs" / GitBlobSha1(files_["config.json"])));
  bool saw_cdn = false;
  for (const HttpRequest& request : hub_.requests) {
    const bool to_hub = absl::StartsWith(request.url, kHub);
    saw_cdn |= absl::StartsWith(request.url, kCdn);
    const bool has_token = std::any_of(request.headers.begin(), request.headers.end(),
                                       [](const std::string& h) { return absl::StrContains(h, kToken); });
    EXPECT_EQ(has_token, to_hub) << request.method << " " << request.url;
  }
  EXPECT_TRUE(saw_cdn);
}

TEST_F(SnapshotPullTest, ADroppedDownloadResumesFromTheBytesItKept) {
  hub_.fault_path = kWeights;
  hub_.drop_after = 7000;
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ExpectSnapshotHolds(*snapshot, Commit('a'), files_);
  std::vector<int64_t> cdn_ranges;
  for (const HttpRequest& request : hub_.requests)
    if (absl::StartsWith(request.url, kCdn)) cdn_ranges.push_back(request.range_start);
  EXPECT_EQ(cdn_ranges, (std::vector<int64_t>{-1, 7000}));
}

TEST_F(SnapshotPullTest, AServerThatIgnoresTheRangeIsReadFromTheStart) {
  hub_.fault_path = kWeights;
  hub_.drop_after = 7000;
  hub_.ignore_range = true;
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ExpectSnapshotHolds(*snapshot, Commit('a'), files_);
}

TEST_F(SnapshotPullTest, CorruptBytesAreRefusedAndLeaveNothingBehind) {
  hub_.fault_path = kWeights;
  hub_.corrupt = true;
  auto snapshot = Pull();
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(snapshot.status().message()), HasSubstr(kWeights));
  EXPECT_THAT(std::string(snapshot.status().message()), HasSubstr(Sha256(files_[kWeights])));
  const fs::path blob = Folder() / "blobs" / Sha256(files_[kWeights]);
  EXPECT_FALSE(fs::exists(blob));
  EXPECT_FALSE(fs::exists(blob.string() + ".incomplete"));
  EXPECT_FALSE(fs::exists(Folder() / "refs" / "main"));  // the ref is written last
}

TEST_F(SnapshotPullTest, AMovedBranchIsFollowedAndUnchangedFilesAreNotFetchedAgain) {
  ASSERT_TRUE(Pull().ok());
  const size_t first_gets = Gets();
  std::map<std::string, std::string> moved = files_;
  moved["config.json"] = R"({"model_type": "bert", "hidden_size": 8})";
  hub_.Publish("main", Commit('b'), moved);
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ExpectSnapshotHolds(*snapshot, Commit('b'), moved);
  EXPECT_EQ(Gets() - first_gets, 1u);  // only the changed config.json
  // The old commit's snapshot stays, selectable by its hash.
  auto old = Pull(Commit('a'));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(ReadAll(fs::path(old->directory) / "config.json"), files_["config.json"]);
}

TEST_F(SnapshotPullTest, AHubThatIsDownStartsFromTheCachedCommit) {
  ASSERT_TRUE(Pull().ok());
  hub_.down = true;
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->commit, Commit('a'));
  ASSERT_EQ(notes_.notes.size(), 1u);
  EXPECT_THAT(notes_.notes[0], HasSubstr("cached commit"));
  // Down and nothing cached: the transport's error, naming the revision URL.
  auto cold = PullSnapshot(HubReference{"org/other", "main"}, settings_, &notes_,
                           [this](const HttpClientOptions&) {
                             return std::make_unique<FakeHubClient>(&hub_);
                           });
  ASSERT_FALSE(cold.ok());
  EXPECT_EQ(cold.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SnapshotPullTest, OfflineMakesNoRequest) {
  ASSERT_TRUE(Pull().ok());
  hub_.requests.clear();
  settings_.offline = true;
  auto snapshot = Pull();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->commit, Commit('a'));
  auto missing = Pull(Commit('c'));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("offline"));
  EXPECT_TRUE(hub_.requests.empty());
}

}  // namespace
}  // namespace embedding::model_store
