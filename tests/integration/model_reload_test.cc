// Model reload against a real server on a versioned model directory (<dir>/<version>/): a new
// version found by the poller or loaded by POST /admin/reload replaces the serving one in one
// step, the previous one stays selectable as NAME@VERSION, requests in flight finish on the
// version they started on, and a broken version is refused (log line and metrics) while the
// old one keeps serving. A new subdirectory of --model-store becomes a new model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <future>

#include "absl/time/clock.h"
#include "client/embedding_client.h"
#include "model_store/dtype/dtype_choice_cache.h"
#include "model_store/formats/model_version.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {
namespace fs = std::filesystem;

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "reload-admin-token-5e1d";

// Version `version` of the model in `model_dir`: a copy of `from`, moved into place whole.
void AddVersion(const std::string& model_dir, const std::string& version, const std::string& from) {
  const std::string staged = testing::CopyModelDir(from, "staged-" + version);
  fs::rename(staged, fs::path(model_dir) / version);
}

std::unique_ptr<client::EmbeddingClient> Client(const testing::ServerProcess& server) {
  client::ClientOptions options{{server.grpc_address()}};
  options.bearer_token = kToken;
  options.max_attempts = 1;
  return client::EmbeddingClient::Connect(options).value();
}

absl::StatusOr<v1::EmbedResponse> EmbedWith(client::EmbeddingClient& client,
                                            const std::string& model, const std::string& text) {
  client::EmbedOptions options;
  options.model = model;
  return client.Embed(client::MakeEmbedRequest({text}, options));
}

// The current version of `model`, polled until it is `want` or `timeout` passes.
std::string WaitForVersion(client::EmbeddingClient& client, const std::string& model,
                           const std::string& want, absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  std::string version;
  while (absl::Now() < give_up) {
    auto info = client.GetModelInfo(model);
    if (info.ok()) version = info->version();
    if (version == want) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return version;
}

httplib::Result PostReload(const std::string& address, const std::string& query,
                           const std::string& token) {
  const size_t colon = address.rfind(':');
  httplib::Client http(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  http.set_read_timeout(60, 0);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", std::string("Bearer ") + token);
  return http.Post("/admin/reload" + query, headers, "", "text/plain");
}

std::string TokenFile() {
  const std::string path = testing::MakeScratchDir("reload-tokens") + "/tokens";
  testing::WriteFile(path, std::string(kToken) + "\n");
  return path;
}

TEST(ModelReload, PollerSwitchesToANewVersionAndKeepsTheOldOneSelectable) {
  const std::string model_dir = testing::MakeScratchDir("reload-poll");
  AddVersion(model_dir, "1", testing::TinyModelDir());
  testing::ServerProcess server({"--model=m=" + model_dir, "--model-poll-interval-s=1",
                                 "--auth-token-file=" + TokenFile()});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = Client(server);
  auto before = EmbedWith(*client, "m", "a document about reloads");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->model_version(), "1");
  const size_t tiny_dims = client::ToVectors(*before)[0].size();

  // "10" sorts after "9" and "2": versions of digits compare as numbers.
  AddVersion(model_dir, "10", testing::SmallModelDir());
  EXPECT_EQ(WaitForVersion(*client, "m", "10", absl::Seconds(20)), "10") << server.Log();
  auto after = EmbedWith(*client, "m", "a document about reloads");
  ASSERT_TRUE(after.ok()) << after.status() << server.Log();
  EXPECT_EQ(after->model_version(), "10");
  EXPECT_NE(client::ToVectors(*after)[0].size(), tiny_dims);

  // The previous version answers by name, with the vectors it gave before.
  auto old = EmbedWith(*client, "m@1", "a document about reloads");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->model_version(), "1");
  EXPECT_EQ(client::ToVectors(*old), client::ToVectors(*before));
  auto missing = EmbedWith(*client, "m@7", "text");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("model: version '7' of 'm' is not loaded"));
  EXPECT_THAT(missing.status().message(), HasSubstr("loaded: 10, 1"));

  const std::string http = server.http_address();
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_info\{.*device="cpu".*model="m".*version="10"\})"), 1);
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_info\{.*model="m".*version="1"\})"), 0);
  EXPECT_EQ(
      testing::ScrapeMetric(http, R"(embedding_model_reloads_total\{model="m",result="loaded"\})"),
      1);
  EXPECT_THAT(server.Log(), HasSubstr("model 'm' reloaded: version 10 serving"));
  testing::ExpectAccountingReturnsToZero(http);
}

TEST(ModelReload, BrokenVersionIsRefusedAndTheOldOneKeepsServing) {
  const std::string model_dir = testing::MakeScratchDir("reload-broken");
  AddVersion(model_dir, "1", testing::TinyModelDir());
  testing::ServerProcess server({"--model=m=" + model_dir, "--model-poll-interval-s=0",
                                 "--auth-token-file=" + TokenFile()});
  ASSERT_TRUE(server.ok()) << server.Log();
  const std::string http = server.http_address();
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_reload_failing\{model="m"\})"), 0);

  // Version 2: its weights cut short.
  const std::string broken = testing::CopyModelDir(testing::TinyModelDir(), "broken");
  fs::resize_file(fs::path(broken) / "model.safetensors", 4096);
  fs::rename(broken, fs::path(model_dir) / "2");
  auto refused = PostReload(http, "?model=m", kToken);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 422) << refused->body;
  EXPECT_THAT(refused->body, HasSubstr("\"result\": \"failed\""));
  EXPECT_THAT(refused->body, HasSubstr("model.safetensors"));
  EXPECT_THAT(refused->body, HasSubstr("\"version\": \"1\""));
  EXPECT_THAT(server.Log(), HasSubstr("model 'm': new version refused: "));
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_reload_failing\{model="m"\})"), 1);
  EXPECT_EQ(
      testing::ScrapeMetric(http, R"(embedding_model_reloads_total\{model="m",result="failed"\})"),
      1);

  auto client = Client(server);
  auto still = EmbedWith(*client, "m", "still served");
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->model_version(), "1");
  // Asked again with nothing changed: the broken version is not retried.
  auto again = PostReload(http, "", kToken);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_THAT(again->body, HasSubstr("\"result\": \"unchanged\""));

  // A good version 3 replaces it and clears the alarm.
  AddVersion(model_dir, "3", testing::SmallModelDir());
  auto loaded = PostReload(http, "?model=m", kToken);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->status, 200) << loaded->body;
  EXPECT_THAT(loaded->body, HasSubstr("\"version\": \"3\""));
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_reload_failing\{model="m"\})"), 0);
  testing::ExpectAccountingReturnsToZero(http);
}

TEST(ModelReload, AdminReloadNeedsABearerTokenAndAServedModel) {
  const std::string model_dir = testing::MakeScratchDir("reload-admin");
  AddVersion(model_dir, "1", testing::TinyModelDir());
  {
    testing::ServerProcess open_server({"--model=m=" + model_dir});
    ASSERT_TRUE(open_server.ok()) << open_server.Log();
    auto off = PostReload(open_server.http_address(), "", "");
    ASSERT_TRUE(off);
    EXPECT_EQ(off->status, 403);
    EXPECT_THAT(off->body, HasSubstr("--auth-token-file"));
  }
  testing::ServerProcess server({"--model=m=" + model_dir, "--auth-token-file=" + TokenFile()});
  ASSERT_TRUE(server.ok()) << server.Log();
  const std::string http = server.http_address();
  auto anonymous = PostReload(http, "", "");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto wrong = PostReload(http, "", "not-the-token");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_THAT(wrong->body, ::testing::Not(HasSubstr("not-the-token")));
  auto unknown = PostReload(http, "?model=nope", kToken);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("model: 'nope' is not served"));
  auto unchanged = PostReload(http, "", kToken);
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->status, 200);
  EXPECT_THAT(unchanged->body, HasSubstr("\"result\": \"unchanged\""));
}

TEST(ModelReload, RequestsInFlightFinishOnTheVersionTheyStartedOn) {
  const std::string model_dir = testing::MakeScratchDir("reload-inflight");
  AddVersion(model_dir, "1", testing::SmallModelDir());
  // One version kept: the old one is unloaded as soon as no request holds it.
  testing::ServerProcess server({"--model=m=" + model_dir, "--model-versions-kept=1",
                                 "--model-poll-interval-s=0", "--auth-token-file=" + TokenFile()});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = Client(server);
  std::string long_text;
  for (int i = 0; i < 2000; ++i) long_text += "word" + std::to_string(i % 97) + " ";
  auto expected = EmbedWith(*client, "m", long_text);
  ASSERT_TRUE(expected.ok()) << expected.status();

  // Long requests in flight on version 1 while version 2 loads and takes over.
  std::vector<std::future<absl::StatusOr<v1::EmbedResponse>>> in_flight;
  for (int i = 0; i < 3; ++i) {
    in_flight.push_back(std::async(std::launch::async, [&] {
      return EmbedWith(*Client(server), "m", long_text);
    }));
  }
  absl::SleepFor(absl::Milliseconds(50));
  AddVersion(model_dir, "2", testing::TinyModelDir());
  auto reloaded = PostReload(server.http_address(), "", kToken);
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded->status, 200) << reloaded->body;
  for (auto& call : in_flight) {
    auto response = call.get();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->model_version(), "1");
    EXPECT_EQ(client::ToVectors(*response), client::ToVectors(*expected));
  }
  auto now = EmbedWith(*client, "m", "short");
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->model_version(), "2");
  auto gone = EmbedWith(*client, "m@1", "short");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  // Unloaded once its last request finished (the reloader looks every second).
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (server.Log().find("version 1 unloaded") == std::string::npos && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(100));
  EXPECT_THAT(server.Log(), HasSubstr("model 'm' version 1 unloaded"));
  testing::ExpectAccountingReturnsToZero(server.http_address());
}

// Under --dtype=auto a reload keeps the dtype the serving version was in, so the same text keeps
// its vector across the reload; ?dtype=measure lets auto choose afresh. The auto cache is
// seeded so that auto's choice differs per version: int8 for version 1's content, fp32 for the
// content of versions 2 and 3. Every answer names the dtype that produced it.
TEST(ModelReload, ANewVersionKeepsTheServingDtypeUnlessAskedToMeasure) {
  const std::string model_dir = testing::MakeScratchDir("reload-dtype");
  const std::string cache_dir = testing::MakeScratchDir("reload-dtype-cache");
  AddVersion(model_dir, "1", testing::TinyModelDir());
  const model_store::DTypeChoiceCache cache(cache_dir);
  ASSERT_TRUE(cache
                  .Store(model_store::ComputeModelVersion(model_dir + "/1"), 0,
                         model_store::ComputeDType::kInt8, {})
                  .ok());
  ASSERT_TRUE(cache
                  .Store(model_store::ComputeModelVersion(testing::SmallModelDir()), 0,
                         model_store::ComputeDType::kFloat32, {})
                  .ok());
  testing::ServerProcess server({"--model=m=" + model_dir, "--dtype=auto",
                                 "--dtype-cache-dir=" + cache_dir, "--model-poll-interval-s=0",
                                 "--auth-token-file=" + TokenFile(),
                                 "--openai-listen=127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = Client(server);
  auto first = EmbedWith(*client, "m", "short");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->dtype(), "int8");

  AddVersion(model_dir, "2", testing::SmallModelDir());
  auto kept = PostReload(server.http_address(), "?model=m", kToken);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200) << kept->body;
  EXPECT_THAT(kept->body, HasSubstr("\"dtype\": \"int8\""));
  EXPECT_THAT(kept->body, HasSubstr("\"dtype_kept_from\": \"1\""));
  EXPECT_THAT(server.Log(), HasSubstr("version 2 serving in int8, the dtype version 1 served in"));
  auto second = EmbedWith(*client, "m", "short");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->model_version(), "2");
  EXPECT_EQ(second->dtype(), "int8");

  // The HTTP routes say it in headers.
  const std::string& api = server.api_address();
  httplib::Client http(api.substr(0, api.rfind(':')), std::stoi(api.substr(api.rfind(':') + 1)));
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kToken}};
  for (const auto& [path, body] : {std::pair<std::string, std::string>{
                                       "/v1/embeddings", R"({"input": "short", "model": "m"})"},
                                   {"/embed", R"({"inputs": "short"})"}}) {
    auto answer = http.Post(path, auth, body, "application/json");
    ASSERT_TRUE(answer) << path;
    EXPECT_EQ(answer->status, 200) << path << ": " << answer->body;
    EXPECT_EQ(answer->get_header_value("X-Embedding-Dtype"), "int8") << path;
    EXPECT_EQ(answer->get_header_value("X-Model-Version"), "2") << path;
  }

  auto bad = PostReload(server.http_address(), "?model=m&dtype=fastest", kToken);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(bad->body, HasSubstr("dtype: must be keep or measure"));

  AddVersion(model_dir, "3", testing::SmallModelDir());
  auto measured = PostReload(server.http_address(), "?model=m&dtype=measure", kToken);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->status, 200) << measured->body;
  EXPECT_THAT(measured->body, HasSubstr("\"dtype\": \"fp32\""));
  EXPECT_THAT(measured->body, Not(HasSubstr("dtype_kept_from")));
  auto third = EmbedWith(*client, "m", "short");
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->model_version(), "3");
  EXPECT_EQ(third->dtype(), "fp32");
  EXPECT_THAT(server.Log(), HasSubstr("version 3 serving in fp32\n"));
}

// A model copied into --model-store after start-up is served under its directory's name once
// the poller has seen it settle; a broken one is refused and not retried; the admin call
// takes a new one at once.
TEST(ModelReload, NewModelsInTheStoreAreServedWithoutARestart) {
  const std::string store = testing::MakeScratchDir("reload-store");
  fs::rename(testing::CopyModelDir(testing::TinyModelDir(), "store-a"), fs::path(store) / "a");
  testing::ServerProcess server({"--model-store=" + store, "--model-poll-interval-s=1",
                                 "--auth-token-file=" + TokenFile()});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = Client(server);
  const std::string http = server.http_address();
  auto before = EmbedWith(*client, "b", "text");
  EXPECT_EQ(before.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(before.status().message(), HasSubstr("available: a"));

  // A broken model and a good one appear; only the good one is served.
  const std::string broken = testing::CopyModelDir(testing::TinyModelDir(), "store-broken");
  fs::resize_file(fs::path(broken) / "model.safetensors", 4096);
  fs::rename(broken, fs::path(store) / "broken");
  fs::rename(testing::CopyModelDir(testing::SmallModelDir(), "store-b"), fs::path(store) / "b");
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  absl::StatusOr<v1::EmbedResponse> b;
  do {
    absl::SleepFor(absl::Milliseconds(200));
    b = EmbedWith(*client, "b", "a document for the new model");
  } while (!b.ok() && absl::Now() < give_up);
  ASSERT_TRUE(b.ok()) << b.status() << server.Log();
  EXPECT_EQ(b->model(), "b");
  testing::ServerProcess direct({"--model=b=" + testing::SmallModelDir()});
  ASSERT_TRUE(direct.ok()) << direct.Log();
  auto expected = EmbedWith(*Client(direct), "b", "a document for the new model");
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(client::ToVectors(*b), client::ToVectors(*expected));

  auto listed = client->ListModels();
  ASSERT_TRUE(listed.ok());
  std::vector<std::string> names;
  for (const auto& model : listed->models()) names.push_back(model.name());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("a", "b"));
  EXPECT_EQ(listed->default_model(), "a");
  EXPECT_THAT(server.Log(), HasSubstr("model 'b' added from --model-store: version "));
  EXPECT_THAT(server.Log(), HasSubstr("model 'broken' in --model-store refused: "));
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_reload_failing\{model="broken"\})"), 1);
  EXPECT_EQ(testing::ScrapeMetric(http, R"(embedding_model_info\{.*model="b".*\})"), 1);
  EXPECT_EQ(EmbedWith(*client, "broken", "x").status().code(), absl::StatusCode::kNotFound);

  // The admin call: the broken one unchanged is not retried; a new one is loaded at once.
  fs::rename(testing::CopyModelDir(testing::TinyModelDir(), "store-c"), fs::path(store) / "c");
  auto added = PostReload(http, "?model=c", kToken);
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 200) << added->body;
  EXPECT_THAT(added->body, HasSubstr("\"new_model\": true"));
  EXPECT_THAT(added->body, HasSubstr("\"result\": \"loaded\""));
  EXPECT_TRUE(EmbedWith(*client, "c", "served at once").ok());
  auto all = PostReload(http, "", kToken);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->status, 200) << all->body;
  EXPECT_THAT(all->body, ::testing::Not(HasSubstr("broken")));
  testing::ExpectAccountingReturnsToZero(http);
}

}  // namespace
}  // namespace embedding
