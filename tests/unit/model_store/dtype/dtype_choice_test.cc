// --dtype=auto: the encoder it keeps is a dtype that passed its guard, and the fastest of those
// it measured; the guard it applies is the pooled cosine it claims.
#include "model_store/dtype/dtype_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model_store/dtype/guard_probe.h"
#include "model_store/kernels/cpu_features.h"
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

TEST(DTypeChoice, GuardIsTheWorstPooledCosineOverTheProbe) {
  auto fp32 = Model::Load(testing::TinyModelDir(), {});
  ModelOptions int8_options;
  int8_options.encoder.dtype = ComputeDType::kInt8;
  auto int8 = Model::Load(testing::TinyModelDir(), int8_options);
  ASSERT_TRUE(fp32.ok() && int8.ok());
  auto probe = GuardProbe((*fp32)->tokenizer(), 64);
  ASSERT_TRUE(probe.ok()) << probe.status();
  auto guard = GuardReference::Encode((*fp32)->encoder(), *probe, PoolingMode::kMean);
  ASSERT_TRUE(guard.ok()) << guard.status();
  auto same = guard->WorstCosine((*fp32)->encoder());
  ASSERT_TRUE(same.ok());
  EXPECT_NEAR(*same, 1.0, 1e-6);
  auto quantised = guard->WorstCosine((*int8)->encoder());
  ASSERT_TRUE(quantised.ok());
  EXPECT_LT(*quantised, 1.0 - 1e-9);
  EXPECT_GE(*quantised, 0.99);

  // The worst, not the mean: an independent loop over the probe at both temperatures.
  double worst = 1.0;
  for (float tau : {1.0f, 0.5f}) {
    EncodeBatch batch{*probe, std::vector<float>(probe->size(), tau), PoolingMode::kMean, true,
                      false};
    auto want = (*fp32)->encoder().Encode(batch);
    auto got = (*int8)->encoder().Encode(batch);
    ASSERT_TRUE(want.ok() && got.ok());
    for (size_t b = 0; b < batch.sequences.size(); ++b) {
      double dot = 0, want_norm = 0, got_norm = 0;
      for (size_t d = 0; d < want->pooled[b].size(); ++d) {
        dot += want->pooled[b][d] * got->pooled[b][d];
        want_norm += want->pooled[b][d] * want->pooled[b][d];
        got_norm += got->pooled[b][d] * got->pooled[b][d];
      }
      worst = std::min(worst, dot / std::sqrt(want_norm * got_norm));
    }
  }
  EXPECT_NEAR(*quantised, worst, 1e-6);
}

TEST(DTypeChoice, ProbeIsRealTextFromShortToAFullWindow) {
  auto model = Model::Load(testing::TinyModelDir(), {});
  ASSERT_TRUE(model.ok());
  const Tokenizer& tokenizer = (*model)->tokenizer();
  auto probe = GuardProbe(tokenizer, 64);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->size(), 8u);
  std::set<std::vector<int32_t>> distinct;
  size_t longest = 0;
  for (const auto& sequence : *probe) {
    EXPECT_LE(sequence.size(), 64u);
    longest = std::max(longest, sequence.size());
    distinct.insert(sequence);
    // Wrapped in the special tokens, and words the tokenizer knows, not unknown pieces.
    const std::vector<int32_t> content(sequence.begin() + 1, sequence.end() - 1);
    EXPECT_EQ(tokenizer.AddSpecialTokens(content), sequence);
    int unknown = 0;
    for (int32_t id : content) unknown += tokenizer.IdToToken(id) == "[UNK]";
    EXPECT_LT(unknown * 4, static_cast<int>(content.size()) + 4);
  }
  EXPECT_EQ(probe->front().size(), 7u);
  EXPECT_EQ(longest, 64u);
  EXPECT_EQ(distinct.size(), probe->size());
}

TEST(DTypeChoice, Guards) {
  EXPECT_EQ(AccuracyGuard(ComputeDType::kBFloat16), 0.999);
  EXPECT_EQ(AccuracyGuard(ComputeDType::kInt8), 0.99);
}

}  // namespace
}  // namespace embedding::model_store
