// --dtype=auto's cache: a choice is read back only for the same model content, CPU, LibTorch
// and thread count; a damaged file is measured again; a load that finds one builds only the
// dtype it names.
#include "model_store/dtype/dtype_choice_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model_store/formats/model_version.h"
#include "model_store/model.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("dtype_cache_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir.string();
}

std::vector<DTypeTrial> Trials() {
  return {{ComputeDType::kFloat32, "", 1.0, 100, true},
          {ComputeDType::kBFloat16, "no avx512_bf16", 0, 0, false},
          {ComputeDType::kInt8, "", 0.995, 250.5, true}};
}

TEST(DTypeChoiceCache, ReadsBackWhatItStoredForTheSameContentAndThreads) {
  const DTypeChoiceCache cache(FreshDir("roundtrip"));
  EXPECT_FALSE(cache.Lookup("00aa", 2).has_value());
  ASSERT_TRUE(cache.Store("00aa", 2, ComputeDType::kInt8, Trials()).ok());
  const auto cached = cache.Lookup("00aa", 2);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->chosen, ComputeDType::kInt8);
  EXPECT_EQ(cached->path, cache.PathFor("00aa", 2));
  ASSERT_EQ(cached->trials.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(cached->trials[i].dtype, Trials()[i].dtype);
    EXPECT_EQ(cached->trials[i].unavailable, Trials()[i].unavailable);
    EXPECT_DOUBLE_EQ(cached->trials[i].min_cosine, Trials()[i].min_cosine);
    EXPECT_DOUBLE_EQ(cached->trials[i].tokens_per_second, Trials()[i].tokens_per_second);
    EXPECT_EQ(cached->trials[i].passed, Trials()[i].passed);
  }
  // Other content, or another thread count, is another measurement.
  EXPECT_FALSE(cache.Lookup("00ab", 2).has_value());
  EXPECT_FALSE(cache.Lookup("00aa", 1).has_value());
  EXPECT_NE(cache.PathFor("00aa", 1), cache.PathFor("00aa", 2));
}

TEST(DTypeChoiceCache, DamagedFilesAreMeasuredAgainNeverTrusted) {
  const DTypeChoiceCache cache(FreshDir("damaged"));
  ASSERT_TRUE(cache.Store("00aa", 2, ComputeDType::kBFloat16, Trials()).ok());
  const std::string path = cache.PathFor("00aa", 2);
  std::string good;
  {
    std::ifstream in(path);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    std::ofstream(path, std::ios::trunc) << text;
  };
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"chosen\": \"bf16\"", "\"chosen\": \"fp64\""},
           {"\"chosen\": \"bf16\"", "\"chosen\": 3"},
           {"; threads 2;", "; threads 3;"},  // written for another machine's threads
           {"\"model_version\": \"00aa\"", "\"model_version\": \"00ab\""},
           {"\"dtype\": \"int8\"", "\"dtype\": \"int4\""},
           {"\"passed\": true", "\"passed\": \"yes\""}}) {
    SCOPED_TRACE(to);
    replace(from, to);
    EXPECT_FALSE(cache.Lookup("00aa", 2).has_value());
  }
  std::ofstream(path, std::ios::trunc) << good.substr(0, good.size() / 2);  // truncated
  EXPECT_FALSE(cache.Lookup("00aa", 2).has_value());
  std::ofstream(path, std::ios::trunc) << good;
  EXPECT_TRUE(cache.Lookup("00aa", 2).has_value());
}

TEST(DTypeChoiceCache, AnUnwritableDirectoryIsAnErrorNamingThePath) {
  const std::string blocker = FreshDir("blocked");
  std::ofstream(blocker) << "a file where the cache directory would be";
  const DTypeChoiceCache cache(blocker);
  const absl::Status stored = cache.Store("00aa", 2, ComputeDType::kFloat32, Trials());
  EXPECT_EQ(stored.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(stored.message()), ::testing::HasSubstr(cache.PathFor("00aa", 2)));
  fs::remove(blocker);
  EXPECT_TRUE(DTypeChoiceCache("").Store("00aa", 2, ComputeDType::kFloat32, Trials()).ok());
  EXPECT_FALSE(DTypeChoiceCache("").Lookup("00aa", 2).has_value());
}

TEST(DTypeChoiceCache, AutoMeasuresOnceThenBuildsOnlyTheCachedDType) {
  ModelOptions options;
  options.encoder.dtype = ComputeDType::kAuto;
  options.dtype_cache_dir = FreshDir("model");
  options.content_version = ComputeModelVersion(testing::TinyModelDir());
  auto first = Model::Load(testing::TinyModelDir(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  const DTypeChoiceCache cache(options.dtype_cache_dir);
  const std::string path = cache.PathFor(options.content_version, 0);
  EXPECT_EQ((*first)->dtype_choice_source(), "measured now, cached in " + path);
  auto second = Model::Load(testing::TinyModelDir(), options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->dtype_choice_source(), path);
  EXPECT_EQ((*second)->encoder().dtype(), (*first)->encoder().dtype());
  ASSERT_EQ((*second)->dtype_trials().size(), (*first)->dtype_trials().size());
  EXPECT_EQ((*second)->dtype_trials()[0].tokens_per_second,
            (*first)->dtype_trials()[0].tokens_per_second);

  // What the file says is what is built, without measuring: fp32 here, whatever auto chose.
  ASSERT_TRUE(cache.Store(options.content_version, 0, ComputeDType::kFloat32, Trials()).ok());
  auto third = Model::Load(testing::TinyModelDir(), options);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ((*third)->encoder().dtype(), ComputeDType::kFloat32);
  EXPECT_EQ((*third)->dtype_trials()[2].tokens_per_second, 250.5);  // the file's figure
  EXPECT_EQ((*third)->dtype_choice_source(), path);
  fs::remove_all(options.dtype_cache_dir);
}

}  // namespace
}  // namespace embedding::model_store
