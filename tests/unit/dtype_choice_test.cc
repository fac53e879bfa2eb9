// --dtype=auto: the encoder it keeps is a dtype that passed its guard, and the fastest of those
// it measured; the guard it applies is the pooled cosine it claims.
#include "model_store/dtype_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_store/cpu_features.h"
#include "model_store/model.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

TEST(DTypeChoice, AutoKeepsTheFastestDTypeThatPassedItsGuard) {
  ModelOptions options;
  options.encoder.dtype = ComputeDType::kAuto;
  auto model = Model::Load(testing::TinyModelDir(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& trials = (*model)->dtype_trials();
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[0].dtype, ComputeDType::kFloat32);
  EXPECT_TRUE(trials[0].passed);
  EXPECT_EQ(trials[1].dtype, ComputeDType::kBFloat16);
  EXPECT_EQ(trials[1].unavailable.empty(), CpuHasNativeBf16()) << trials[1].unavailable;
  EXPECT_EQ(trials[2].dtype, ComputeDType::kInt8);
  EXPECT_TRUE(trials[2].unavailable.empty()) << trials[2].unavailable;

  const ComputeDType chosen = (*model)->encoder().dtype();
  double fastest_passed = 0;
  for (const auto& trial : trials) {
    SCOPED_TRACE(ComputeDTypeName(trial.dtype));
    if (!trial.unavailable.empty()) {
      EXPECT_FALSE(trial.passed);
      continue;
    }
    EXPECT_EQ(trial.passed, trial.min_cosine >= AccuracyGuard(trial.dtype));
    if (trial.passed) {
      EXPECT_GT(trial.tokens_per_second, 0);
      fastest_passed = std::max(fastest_passed, trial.tokens_per_second);
    }
    if (trial.dtype == chosen) {
      EXPECT_TRUE(trial.passed);
      EXPECT_EQ(trial.tokens_per_second, fastest_passed);
    }
  }
  EXPECT_NE(chosen, ComputeDType::kAuto);
}

TEST(DTypeChoice, GuardCosineIsTheWorstPooledCosine) {
  auto fp32 = Model::Load(testing::TinyModelDir(), {});
  ModelOptions int8_options;
  int8_options.encoder.dtype = ComputeDType::kInt8;
  auto int8 = Model::Load(testing::TinyModelDir(), int8_options);
  ASSERT_TRUE(fp32.ok() && int8.ok());
  auto same = GuardCosine((*fp32)->encoder(), (*fp32)->encoder(), PoolingMode::kMean);
  ASSERT_TRUE(same.ok());
  EXPECT_NEAR(*same, 1.0, 1e-6);
  auto quantised = GuardCosine((*fp32)->encoder(), (*int8)->encoder(), PoolingMode::kMean);
  ASSERT_TRUE(quantised.ok());
  EXPECT_LT(*quantised, 1.0 - 1e-9);
  EXPECT_GE(*quantised, 0.99);
}

TEST(DTypeChoice, Guards) {
  EXPECT_EQ(AccuracyGuard(ComputeDType::kBFloat16), 0.999);
  EXPECT_EQ(AccuracyGuard(ComputeDType::kInt8), 0.99);
}

}  // namespace
}  // namespace embedding::model_store
