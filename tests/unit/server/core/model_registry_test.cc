// The model registry in process, on copies of the tiny model in a versioned directory: a new
// version is taken only once it has settled, NAME@VERSION reaches the versions still loaded,
// a broken version is refused once and not retried until it changes, and a replaced version
// is freed only when no request holds it.
#include "server/core/model_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/core/batch_budget.h"
#include "tests/testing/test_models.h"

namespace embedding::server {
namespace {

namespace fs = std::filesystem;
using Result = ReloadOutcome::Result;

class ModelRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("model_registry_test." + std::to_string(getpid()));
    fs::remove_all(root_);
    AddVersion("1");
    ModelOptions options;
    options.sources = {{"m", root_.string()}};
    options.versions_kept = 2;
    ModelRegistry::VersionObserver versions;
    versions.on_unloaded = [this](const ServedModel& model) { unloaded_.push_back(model.version); };
    registry_ = ModelRegistry::Load(options, BatcherOptions{}, &inference_, &completions_, nullptr,
                                    versions)
                    .value();
  }
  void TearDown() override {
    registry_.reset();
    fs::remove_all(root_);
  }

  void AddVersion(const std::string& version) {
    fs::create_directories(root_);
    fs::copy(testing::TinyModelDir(), root_ / version, fs::copy_options::recursive);
  }
  // The one outcome of reloading "m".
  ReloadOutcome Reload(bool settled) {
    auto outcomes = registry_->Reload("m", settled, /*measure_dtype=*/false);
    EXPECT_TRUE(outcomes.ok()) << outcomes.status();
    EXPECT_EQ(outcomes->size(), 1u);
    return outcomes->front();
  }
  std::string Serving(const std::string& name = "m") {
    auto found = registry_->Find(name);
    return found.ok() ? (*found)->version : std::string(found.status().message());
  }

  fs::path root_;
  WorkerPool inference_{1};
  WorkerPool completions_{1};
  std::unique_ptr<ModelRegistry> registry_;
  std::vector<std::string> unloaded_;
};

TEST_F(ModelRegistryTest, ANewVersionIsTakenOnceItHasSettled) {
  EXPECT_EQ(Serving(), "1");
  AddVersion("2");
  EXPECT_EQ(Reload(/*settled=*/true).result, Result::kUnchanged);  // seen once: may be copying
  const ReloadOutcome taken = Reload(/*settled=*/true);
  EXPECT_EQ(taken.result, Result::kLoaded);
  EXPECT_EQ(taken.version, "2");
  EXPECT_EQ(Serving(), "2");
  EXPECT_EQ(Serving("m@1"), "1");  // still loaded, by name and version
  EXPECT_EQ(Reload(true).result, Result::kUnchanged);
}

TEST_F(ModelRegistryTest, ABrokenVersionIsRefusedOnceAndTheOldOneKeepsServing) {
  fs::create_directories(root_ / "2");
  std::ofstream(root_ / "2" / "config.json") << "{ not json";
  const ReloadOutcome refused = Reload(/*settled=*/false);
  EXPECT_EQ(refused.result, Result::kFailed);
  EXPECT_EQ(refused.version, "1");
  EXPECT_THAT(refused.error, ::testing::HasSubstr("config.json"));
  EXPECT_EQ(Serving(), "1");
  EXPECT_EQ(Reload(false).result, Result::kUnchanged);  // not retried until it changes
}

TEST_F(ModelRegistryTest, AReplacedVersionIsFreedOnlyWhenNoRequestHoldsIt) {
  std::shared_ptr<const ServedModel> held = registry_->Find("m").value();
  AddVersion("2");
  EXPECT_EQ(Reload(false).result, Result::kLoaded);
  AddVersion("3");
  EXPECT_EQ(Reload(false).result, Result::kLoaded);  // keeps 3 and 2; 1 is replaced
  EXPECT_THAT(Serving("m@1"), ::testing::HasSubstr("is not loaded; loaded: 3, 2"));
  registry_->ReleaseUnused();
  EXPECT_TRUE(unloaded_.empty()) << "version 1 is still held by a request";
  EXPECT_EQ(held->version, "1");
  held.reset();
  registry_->ReleaseUnused();
  EXPECT_EQ(unloaded_, std::vector<std::string>{"1"});
}

TEST_F(ModelRegistryTest, UnknownNamesAreNotFound) {
  EXPECT_EQ(registry_->Reload("nope", false, false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry_->Find("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry_->Find("m@9").status().code(), absl::StatusCode::kNotFound);
}

// The batch budget is the registry's to size per model and device (batch_budget.h): on the
// CPU, --max_batch_tokens=0 is kCpuBatchTokens and a named count stays as it is.
TEST(ModelRegistryBudget, TheCpusBatchersTakeTheDefaultOrTheNamedCount) {
  WorkerPool inference{1}, completions{1};
  ModelOptions options;
  options.sources = {{"m", testing::TinyModelDir()}};
  for (const auto& [requested, expected] :
       {std::pair<int64_t, int64_t>{0, kCpuBatchTokens}, {700, 700}}) {
    BatcherOptions batching;
    batching.max_batch_tokens = requested;
    auto registry = ModelRegistry::Load(options, batching, &inference, &completions);
    ASSERT_TRUE(registry.ok()) << registry.status();
    EXPECT_EQ((*registry)->Find("m").value()->batcher->options().max_batch_tokens, expected);
  }
}

}  // namespace
}  // namespace embedding::server
