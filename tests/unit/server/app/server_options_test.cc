// Server flags parsed in process: defaults, repeated --model, a --model-store scanned once,
// EMBEDDING_* fallbacks (the command line wins), and errors naming the flag. Each case runs
// under a FlagSaver: absl flags are process-wide.
#include "server/app/server_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/flags/reflection.h"
#include "tests/testing/test_models.h"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ServerOptions> Parse(std::vector<std::string> args) {
  absl::FlagSaver saver;
  args.insert(args.begin(), "embedding_server");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseServerOptions(static_cast<int>(argv.size()), argv.data());
}

TEST(ServerOptions, DefaultsAndRepeatedModels) {
  auto options = Parse({"--model=a=/models/a", "--model", "/models/b", "--dtype=bf16"});
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->models.sources.size(), 2u);
  EXPECT_EQ(options->models.sources[0].name, "a");
  EXPECT_EQ(options->models.sources[1].name, "b");  // a bare directory: its name
  EXPECT_EQ(options->models.dtype, model_store::ComputeDType::kBFloat16);
  EXPECT_EQ(options->grpc_listen, "0.0.0.0:50051");
  EXPECT_EQ(options->limits.default_strategy, Strategy::kChunkMean);
  EXPECT_EQ(options->limits.max_concurrent_requests, 256);
  EXPECT_EQ(options->drain_timeout, absl::Seconds(30));
  // --device=auto: a GPU only in a CUDA build on a machine with one (not Debian's LibTorch).
  EXPECT_FALSE(options->models.device.cuda);
  // Sized per model and device at load (batch_budget.h); the GPU's share.
  EXPECT_EQ(options->batching.max_batch_tokens, 0);
  EXPECT_EQ(options->models.gpu_memory_utilization, 0.9);
}

// A CUDA device that is not there is refused at start, naming the flag (model_store's
// compute_device_test says what is missing on each kind of build).
TEST(ServerOptions, ACudaDeviceIsRefusedAtStart) {
  auto options = Parse({"--model=a=/m", "--device=cuda:99"});
  EXPECT_EQ(options.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(options.status().message()), ::testing::StartsWith("--device=cuda:99: "));
}

// auto is the default dtype; its choice is kept in the user's cache directory unless the flag
// names another or turns it off.
TEST(ServerOptions, AutoIsTheDefaultDTypeAndKeepsItsChoiceInTheUsersCache) {
  const std::string saved_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  const std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_CACHE_HOME");
  auto options = Parse({"--model=a=/models/a"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->models.dtype, model_store::ComputeDType::kAuto);
  EXPECT_EQ(options->models.dtype_cache_dir, "/home/u/.cache/embedding-server");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(Parse({"--model=a=/models/a"})->models.dtype_cache_dir, "/xdg/embedding-server");
  EXPECT_EQ(Parse({"--model=a=/models/a", "--dtype-cache-dir=/c"})->models.dtype_cache_dir, "/c");
  EXPECT_EQ(Parse({"--model=a=/models/a", "--dtype-cache-dir=off"})->models.dtype_cache_dir, "");
  EXPECT_EQ(Parse({"--model=a=/models/a", "--dtype=fp32"})->models.dtype,
            model_store::ComputeDType::kFloat32);
  // A reload keeps the serving dtype unless told to measure again.
  EXPECT_FALSE(options->models.reload_measures_dtype);
  EXPECT_TRUE(
      Parse({"--model=a=/models/a", "--reload-dtype=measure"})->models.reload_measures_dtype);
  if (saved_xdg.empty()) {
    unsetenv("XDG_CACHE_HOME");
  } else {
    setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  }
  setenv("HOME", saved_home.c_str(), 1);
}

TEST(ServerOptions, HubRepositoryIdsAreServedFromTheCache) {
  auto options =
      Parse({"--model=BAAI/bge-m3@v1.0", "--model=e5=intfloat/e5-base-v2", "--model=/models/a",
             "--hub-cache-dir=/cache", "--hub-offline", "--hub-ca-bundle=/etc/proxy-ca.pem"});
  ASSERT_TRUE(options.ok()) << options.status();
  const auto& sources = options->models.sources;
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[0].name, "bge-m3");
  ASSERT_TRUE(sources[0].hub.has_value());
  EXPECT_EQ(sources[0].hub->repo, "BAAI/bge-m3");
  EXPECT_EQ(sources[0].hub->revision, "v1.0");
  EXPECT_EQ(sources[0].hub_settings.cache_dir, "/cache");
  EXPECT_TRUE(sources[0].hub_settings.offline);
  EXPECT_EQ(sources[0].hub_settings.ca_bundle, "/etc/proxy-ca.pem");
  EXPECT_EQ(sources[1].name, "e5");
  EXPECT_EQ(sources[1].hub->revision, "main");
  EXPECT_FALSE(sources[2].hub.has_value());  // a path stays a directory, existing or not
  EXPECT_EQ(sources[2].directory, "/models/a");

  for (const char* bad : {"--model=x=org--a/b", "--model=x=org/name.git", "--model=x=a b/c"}) {
    auto refused = Parse({bad});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr(std::string(bad) + ": ")) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("is not a Hub repository id")) << bad;
  }
}

TEST(ServerOptions, EnvironmentFallsBackAndTheCommandLineWins) {
  setenv("EMBEDDING_MAX_CONCURRENT_REQUESTS", "7", 1);
  setenv("EMBEDDING_DEFAULT_STRATEGY", "late_chunking", 1);
  auto options = Parse({"--model=a=/m", "--default-strategy=chunk_max"});
  unsetenv("EMBEDDING_MAX_CONCURRENT_REQUESTS");
  unsetenv("EMBEDDING_DEFAULT_STRATEGY");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->limits.max_concurrent_requests, 7);
  EXPECT_EQ(options->limits.default_strategy, Strategy::kChunkMax);
}

TEST(ServerOptions, AModelStoreIsScannedForModelDirectoriesInNameOrder) {
  const auto store = std::filesystem::temp_directory_path() /
                     ("server_options_test_store." + std::to_string(getpid()));
  std::filesystem::remove_all(store);
  std::filesystem::create_directories(store / "not-a-model");
  // "x@1": '@' selects a version, so no model is named so.
  for (const char* name : {"zeta", "alpha", "x@1"}) {
    std::filesystem::copy(testing::TinyModelDir(), store / name,
                          std::filesystem::copy_options::recursive);
  }
  auto options = Parse({"--model-store=" + store.string()});
  std::filesystem::remove_all(store);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->models.sources.size(), 2u);
  EXPECT_EQ(options->models.sources[0].name, "alpha");
  EXPECT_EQ(options->models.sources[1].name, "zeta");
}

// --hf_overrides repeats like --model and holds commas; NAME may be left out for one model.
TEST(ServerOptions, ConfigOverridesAttachToTheirModel) {
  auto one = Parse({"--model=r=/m/r", R"(--hf_overrides={"architectures": ["X"], "a": 1})"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->models.sources[0].hf_overrides, R"({"a":1,"architectures":["X"]})");
  auto named = Parse({"--model=a=/m/a", "--model=b=/m/b", "--hf_overrides", R"(b={"k": true})"});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->models.sources[0].hf_overrides, "");
  EXPECT_EQ(named->models.sources[1].hf_overrides, R"({"k":true})");
  setenv("EMBEDDING_HF_OVERRIDES", R"(a={"x": [1, 2]})", 1);
  auto from_env = Parse({"--model=a=/m/a"});
  unsetenv("EMBEDDING_HF_OVERRIDES");
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_EQ(from_env->models.sources[0].hf_overrides, R"({"x":[1,2]})");
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--model=a=/m/a", "--hf_overrides=[1, 2]"}, "expected [NAME=]JSON"},
           {{"--model=a=/m/a", "--hf_overrides=a=[1, 2]"}, "not a JSON object"},
           {{"--model=a=/m/a", "--hf_overrides={\"a\": "}, "not a JSON object"},
           {{"--model=a=/m/a", "--model=b=/m/b", "--hf_overrides={}"}, "name one as NAME=JSON"},
           {{"--model=a=/m/a", R"(--hf_overrides=c={})"}, "no served model 'c' (served: a)"},
           {{"--model=a=/m/a", "--hf_overrides=a={}", "--hf_overrides=a={}"},
            "overrides already"}}) {
    auto options = Parse(args);
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << args.back();
    EXPECT_THAT(std::string(options.status().message()),
                ::testing::AllOf(::testing::StartsWith("--hf_overrides="), HasSubstr(message)));
  }
}

TEST(ServerOptions, BadValuesNameTheirFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--model: at least one model is required"},
      {{"--model=a@1=/m"}, "NAME may not hold '@'"},
      {{"--model=a=/m", "--dtype=fp64"}, "--dtype=fp64: allowed fp32, bf16, fp16, int8, auto"},
      {{"--model=a=/m", "--dtype=fp16", "--device=cpu"},
       "--dtype=fp16: runs on a CUDA device only, and --device resolved to cpu"},
      {{"--model=a=/m", "--reload-dtype=fastest"}, "--reload_dtype=fastest: allowed keep, measure"},
      {{"--model=a=/m", "--max-batch-padding=2"}, "--max_batch_padding: allowed [0, 1]"},
      {{"--model=a=/m", "--default-temperature=9"}, "--default_temperature: must lie in"},
      {{"--model=a=/m", "--default-strategy=fastest"}, "--default_strategy: 'fastest'"},
      {{"--model=a=/m", "--model-versions-kept=0"}, "--model_versions_kept: must be in [1, 16]"},
      {{"--model=a=/m", "--auth-metrics"}, "--auth_metrics: needs --auth-token-file"},
      {{"--model=a=/m", "--collapse-window=1"}, "--collapse_window: must be >= 2"},
      {{"--model=a=/m", "--drain-timeout-s=0"}, "--drain_timeout_s=0: must be > 0"},
      {{"--model-store=/nonexistent/store"}, "--model_store=/nonexistent/store"},
      {{"--model=a=/m", "--device=gpu"}, "--device=gpu: allowed cpu, cuda, cuda:N (N >= 0), auto"},
      {{"--model=a=/m", "--max-batch-tokens=-1"}, "--max_batch_tokens: must be >= 0"},
      {{"--model=a=/m", "--gpu-memory-utilization=0"},
       "--gpu_memory_utilization=0: allowed (0, 1]"},
      {{"--model=a=/m", "--gpu-memory-utilization=1.5"},
       "--gpu_memory_utilization=1.5: allowed (0, 1]"},
  };
  for (const auto& [args, message] : cases) {
    auto options = Parse(args);
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(options.status().message(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace embedding::server
