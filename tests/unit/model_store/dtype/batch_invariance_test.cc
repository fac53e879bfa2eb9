// The bound a model measures at load (ModelInfo.batch_invariance_bound): on LibTorch's own ops,
// a GPU's path, the worst difference it claims, recomputed here over its probe; on the CPU's
// kernels 0 in every dtype, with the passes run where Load is told to run them.
#include "model_store/dtype/batch_invariance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "model_store/dtype/guard_probe.h"
#include "model_store/model.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

// The measurement itself, on an encoder whose batched vectors move: the worst move it makes.
TEST(BatchInvariance, MeasuresTheWorstMoveOfABatchedVector) {
  const std::vector<std::vector<int32_t>> probe = {{1, 2}, {1, 2, 3}, {4}, {5, 6, 7, 8}, {9}};
  std::vector<size_t> batch_sizes;
  const EncodeFn encode = [&](const EncodeBatch& batch) -> absl::StatusOr<EncodeResult> {
    batch_sizes.push_back(batch.sequences.size());
    EncodeResult result;
    for (size_t i = 0; i < batch.sequences.size(); ++i) {
      // A vector of the text and its tau; batched, sequence i's component 1 moves by i/1000.
      std::vector<float> pooled = {static_cast<float>(batch.sequences[i].size()),
                                   batch.temperatures[i], 0.5f};
      if (batch.sequences.size() > 1) pooled[1] += static_cast<float>(i) / 1000;
      result.pooled.push_back(pooled);
    }
    return result;
  };
  auto bound = MeasureBatchInvariance(encode, probe, PoolingMode::kMean);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_NEAR(*bound, 0.003, 1e-6);  // the fourth sequence's, the last one measured
  EXPECT_THAT(batch_sizes, ::testing::ElementsAre(4, 1, 1, 1, 1));

  const EncodeFn failing = [](const EncodeBatch&) -> absl::StatusOr<EncodeResult> {
    return absl::ResourceExhaustedError("out of memory");
  };
  EXPECT_EQ(MeasureBatchInvariance(failing, probe, PoolingMode::kMean).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// Load's own forward passes go where it is told (the server's inference thread): the
// batch-invariance probe, and under auto every trial; the CPU's bound is 0 in every dtype.
TEST(BatchInvariance, LoadRunsItsPassesThroughTheForwardRunnerAndMeasuresZeroOnTheCpu) {
  for (const ComputeDType dtype : {ComputeDType::kFloat32, ComputeDType::kBFloat16,
                                   ComputeDType::kInt8, ComputeDType::kAuto}) {
    SCOPED_TRACE(ComputeDTypeName(dtype));
    int runs = 0;
    ModelOptions options;
    options.encoder.dtype = dtype;
    options.run_forward = [&runs](const std::function<void()>& passes) {
      ++runs;
      std::thread(passes).join();
    };
    auto model = Model::Load(testing::TinyModelDir(), options);
    if (model.status().code() == absl::StatusCode::kFailedPrecondition) continue;  // no bf16
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ((*model)->batch_invariance_bound(), std::optional<double>(0.0));
    // The cost per token and the probe; auto adds fp32's guard and speed, then each
    // candidate's guard (and speed where it passes).
    if (dtype == ComputeDType::kAuto) {
      EXPECT_GE(runs, 2 + 2 + 1);
    } else {
      EXPECT_EQ(runs, 2);
    }
  }
}

class BatchInvarianceBound : public ::testing::TestWithParam<std::string> {};

// On LibTorch's own ops (a GPU's path) the figure is what a recomputation over the same probe
// finds: each text alone against the four in one batch, every other one at tau 0.7.
TEST_P(BatchInvarianceBound, IsTheWorstDifferenceOverItsProbe) {
  ModelOptions options;
  options.encoder.torch_ops = true;
  auto model = Model::Load(GetParam(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto probe = GuardProbe((*model)->tokenizer(), (*model)->max_input_length());
  ASSERT_TRUE(probe.ok()) << probe.status();
  probe->resize(4);
  EncodeBatch together;
  together.sequences = *probe;
  together.temperatures = {1.0f, 0.7f, 1.0f, 0.7f};
  together.pooling = (*model)->pooling();
  auto batched = (*model)->encoder().Encode(together);
  ASSERT_TRUE(batched.ok()) << batched.status();
  double worst = 0;
  for (size_t i = 0; i < probe->size(); ++i) {
    EncodeBatch one = together;
    one.sequences = {(*probe)[i]};
    one.temperatures = {together.temperatures[i]};
    auto alone = (*model)->encoder().Encode(one);
    ASSERT_TRUE(alone.ok()) << alone.status();
    for (size_t d = 0; d < alone->pooled[0].size(); ++d) {
      worst = std::max(worst,
                       std::fabs(static_cast<double>(alone->pooled[0][d]) - batched->pooled[i][d]));
    }
  }
  ASSERT_TRUE((*model)->batch_invariance_bound().has_value());
  EXPECT_EQ(*(*model)->batch_invariance_bound(), worst);
  std::cout << GetParam() << " on LibTorch's ops: bound " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(Families, BatchInvarianceBound,
                         ::testing::Values(testing::SmallModelDir(), testing::Qwen3ModelDir(),
                                           testing::ModernBertModelDir(),
                                           testing::JinaBertModelDir()),
                         [](const auto& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace embedding::model_store
