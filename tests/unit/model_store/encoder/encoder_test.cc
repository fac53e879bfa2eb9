// Encoder properties that need no reference implementation: TempScale at tau = 1 is the
// unmodified computation, batching never changes a row, and the statistics match their
// definitions. (tests/reference/ compares against PyTorch's own modules.)
#include "model_store/encoder/encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "model_store/dtype/guard_probe.h"
#include "model_store/kernels/cpu_features.h"
#include "model_store/model.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class EncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto model = Model::Load(testing::TinyModelDir(), {});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
  }
  static void TearDownTestSuite() { delete model_; }

  // [CLS] + `length - 2` seeded random ids + [SEP].
  static std::vector<int32_t> RandomSequence(int length, int seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(
        5, static_cast<int32_t>(model_->config().vocab_size - 1));
    std::vector<int32_t> content(std::max(0, length - 2));
    for (auto& v : content) v = id(rng);
    return model_->tokenizer().AddSpecialTokens(content);
  }

  static EncodeResult Encode(std::vector<std::vector<int32_t>> sequences, std::vector<float> taus,
                             PoolingMode pooling = PoolingMode::kMean, bool normalize = false) {
    EncodeBatch batch;
    batch.sequences = std::move(sequences);
    batch.temperatures = std::move(taus);
    batch.pooling = pooling;
    batch.normalize = normalize;
    batch.return_hidden_states = true;
    auto result = model_->encoder().Encode(batch);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : EncodeResult{};
  }

  static float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
  }

  static Model* model_;
};
Model* EncoderTest::model_ = nullptr;

TEST_F(EncoderTest, TauOneInAMixedBatchEqualsThePlainPath) {
  // A uniform batch takes the unscaled path; beside a tau = 0.5 row the same tau = 1 row goes
  // through the per-row scaling. Same shapes, so any difference is TempScale's own.
  const auto seq = RandomSequence(200, 1);
  const auto other = RandomSequence(64, 2);
  const auto plain = Encode({seq, other}, {1.0f, 1.0f});
  const auto mixed = Encode({seq, other}, {1.0f, 0.5f});
  EXPECT_LE(MaxAbsDiff(plain.hidden_states[0], mixed.hidden_states[0]), 1e-6);
  EXPECT_LE(MaxAbsDiff(plain.pooled[0], mixed.pooled[0]), 1e-6);
  EXPECT_GT(MaxAbsDiff(plain.pooled[1], mixed.pooled[1]), 1e-3);
}

TEST_F(EncoderTest, PaddedMixedBatchEqualsOneAtATime) {
  const std::vector<int> lengths = {1, 2, 7, 63, 130, 300, 512, 45};
  const std::vector<float> taus = {1.0f, 0.8f, 0.5f, 0.3f, 1.0f, 0.65f, 0.9f, 2.0f};
  std::vector<std::vector<int32_t>> seqs;
  for (size_t i = 0; i < lengths.size(); ++i) seqs.push_back(RandomSequence(lengths[i], 10 + i));
  const auto batched = Encode(seqs, taus);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto alone = Encode({seqs[i]}, {taus[i]});
    // Bit for bit: the same text gives the same vector in any batch.
    EXPECT_EQ(MaxAbsDiff(alone.hidden_states[0], batched.hidden_states[i]), 0) << "row " << i;
    EXPECT_EQ(MaxAbsDiff(alone.pooled[0], batched.pooled[i]), 0) << "row " << i;
    EXPECT_EQ(alone.high_frequency_ratio[0], batched.high_frequency_ratio[i]) << "row " << i;
  }
}

// A sequence whose own rows reach 4,096 projects and attends one head at a time, shorter ones
// are projected together in groups below that (encoder_layers.cc). In a batch of 8,190 tokens
// each sequence must still be computed as it is alone: the long one head by head with its own
// row count, the short ones in groups around it (the last group's rows shifted back to fit),
// with different row counts, kernels and weight slices, and still the same bits in every dtype
// (the README's "Same text, same vector"). Heads of 64, so every kernel's packed projection
// splits by head (packed_linear_columns_test.cc).
class EncoderHeadByHead : public ::testing::TestWithParam<ComputeDType> {};

TEST_P(EncoderHeadByHead, EverySequenceOfALongBatchEqualsItselfAlone) {
  if (GetParam() == ComputeDType::kBFloat16 && !CpuHasNativeBf16()) {
    GTEST_SKIP() << "no native bf16 on " << CpuIsa();
  }
  ModelOptions options;
  options.encoder.dtype = GetParam();
  auto model = Model::Load(testing::NomicBertHeadsOf64ModelDir(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> id(5, (*model)->config().vocab_size - 1);
  EncodeBatch batch;
  batch.return_hidden_states = true;
  int i = 0;
  for (const int length : {8, 4100, 300, 3000, 700, 82}) {
    std::vector<int32_t> content(length - 2);
    for (auto& v : content) v = id(rng);
    batch.sequences.push_back((*model)->tokenizer().AddSpecialTokens(content));
    batch.temperatures.push_back(i++ % 2 == 0 ? 1.0f : 0.4f + 0.1f * i);
  }
  auto together = (*model)->encoder().Encode(batch);
  ASSERT_TRUE(together.ok()) << together.status();
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    EncodeBatch one = batch;
    one.sequences = {batch.sequences[i]};
    one.temperatures = {batch.temperatures[i]};
    auto alone = (*model)->encoder().Encode(one);
    ASSERT_TRUE(alone.ok()) << alone.status();
    const std::vector<float>& a = alone->hidden_states[0];
    const std::vector<float>& b = together->hidden_states[i];
    ASSERT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::abs(a[j] - b[j]));
    EXPECT_EQ(worst, 0) << "sequence " << i << " of " << batch.sequences[i].size() << " tokens";
  }
}

// Random texts of `lengths` tokens (a window at most), every other one at another temperature
// and, for a model with task adapters, none and each task in turn; with their final states.
EncodeBatch MixedBatch(const Model& model, const std::vector<int>& lengths, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> id(5, model.config().vocab_size - 1);
  const int window = static_cast<int>(model.config().max_sequence_length());
  const auto tasks = static_cast<int32_t>(model.config().adapters.size());
  EncodeBatch batch;
  batch.return_hidden_states = true;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int32_t> content(std::min(lengths[i], window) - 2);
    for (auto& v : content) v = id(rng);
    batch.sequences.push_back(model.tokenizer().AddSpecialTokens(content));
    batch.temperatures.push_back(i % 2 == 0 ? 1.0f : 0.45f + 0.1f * i);
    if (tasks > 0) batch.adapters.push_back(static_cast<int32_t>(i % (tasks + 1)) - 1);
  }
  return batch;
}

// Sequence i of `batch` alone, with its temperature and task.
EncodeBatch Alone(const EncodeBatch& batch, size_t i) {
  EncodeBatch one = batch;
  one.sequences = {batch.sequences[i]};
  one.temperatures = {batch.temperatures[i]};
  if (!batch.adapters.empty()) one.adapters = {batch.adapters[i]};
  return one;
}

// A test's name from its model directory: "xlm_roberta" for ".../xlm-roberta".
std::string ModelDirName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(info.param.rfind('/') + 1);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Every family's positions and feed-forward (rotary with NTK, ALiBi, the logn scale, gated
// halves) keep a sequence's vector its own: in a batch of mixed lengths and one of equal
// lengths, each beside other temperatures, it equals itself alone, bit for bit.
class FamilyBatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyBatchInvariance, EachSequenceOfABatchEqualsItselfAlone) {
  // In every dtype this CPU runs (bf16 needs avx512_bf16 or AMX: refused elsewhere).
  for (const ComputeDType dtype :
       {ComputeDType::kFloat32, ComputeDType::kBFloat16, ComputeDType::kInt8}) {
    SCOPED_TRACE(ComputeDTypeName(dtype));
    ModelOptions options;
    options.encoder.dtype = dtype;
    auto model = Model::Load(GetParam(), options);
    if (model.status().code() == absl::StatusCode::kFailedPrecondition) continue;
    ASSERT_TRUE(model.ok()) << model.status();
    // Measured at load in every dtype: the CPU's kernels are bit-identical.
    EXPECT_EQ((*model)->batch_invariance_bound(), std::optional<double>(0.0));
    std::mt19937 rng(36);
    // Lengths past a 512-token window are that window.
    for (const std::vector<int>& lengths :
         {std::vector<int>{2, 9, 300, 1200, 40}, std::vector<int>{300, 300, 300, 300}}) {
      const EncodeBatch batch = MixedBatch(**model, lengths, rng);
      auto together = (*model)->encoder().Encode(batch);
      ASSERT_TRUE(together.ok()) << together.status();
      for (size_t i = 0; i < lengths.size(); ++i) {
        auto alone = (*model)->encoder().Encode(Alone(batch, i));
        ASSERT_TRUE(alone.ok()) << alone.status();
        EXPECT_EQ(alone->hidden_states[0], together->hidden_states[i])
            << "sequence " << i << " of " << lengths[i] << " tokens";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyBatchInvariance,
                         ::testing::Values(testing::XlmRobertaModelDir(),
                                           testing::NomicBertModelDir(), testing::GteModelDir(),
                                           testing::JinaBertModelDir(),
                                           testing::ModernBertModelDir(), testing::Qwen3ModelDir(),
                                           testing::Qwen2ModelDir(), testing::RobertaModelDir(),
                                           testing::CamembertModelDir(),
                                           testing::DistilBertModelDir(), testing::MpnetModelDir(),
                                           testing::Gemma3ModelDir(), testing::T5ModelDir(),
                                           testing::T5GatedModelDir(), testing::NomicMoeModelDir(),
                                           testing::JinaV3ModelDir()),
                         ModelDirName);

// LibTorch's own ops (the GPU's path) against the CPU kernels, per family: in a batch of mixed
// lengths (padded into one attention call, keys past each end masked) and one of equal lengths
// (no mask), each beside other temperatures and tasks, every sequence's states equal the CPU
// kernels' for it alone, to fp32 rounding.
class TorchOpsFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchOpsFamilies, EverySequenceOfABatchEqualsTheCpuKernelsAlone) {
  ModelOptions cpu_options, torch_options;
  torch_options.encoder.torch_ops = true;
  auto cpu = Model::Load(GetParam(), cpu_options);
  auto torch_ops = Model::Load(GetParam(), torch_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(torch_ops.ok()) << torch_ops.status();
  std::mt19937 rng(52);
  for (const std::vector<int>& lengths :
       {std::vector<int>{2, 9, 300, 700, 40}, std::vector<int>{120, 120, 120}}) {
    const EncodeBatch batch = MixedBatch(**cpu, lengths, rng);
    auto together = (*torch_ops)->encoder().Encode(batch);
    ASSERT_TRUE(together.ok()) << together.status();
    for (size_t i = 0; i < lengths.size(); ++i) {
      auto alone = (*cpu)->encoder().Encode(Alone(batch, i));
      ASSERT_TRUE(alone.ok()) << alone.status();
      const std::vector<float>& want = alone->hidden_states[0];
      const std::vector<float>& got = together->hidden_states[i];
      ASSERT_EQ(got.size(), want.size());
      float largest = 0, worst = 0;
      for (size_t j = 0; j < want.size(); ++j) {
        largest = std::max(largest, std::abs(want[j]));
        worst = std::max(worst, std::abs(got[j] - want[j]));
      }
      EXPECT_LT(worst, 2e-5f * largest) << "sequence " << i << " of " << lengths[i] << " tokens";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TorchOpsFamilies,
                         ::testing::Values(testing::XlmRobertaModelDir(),
                                           testing::NomicBertModelDir(),
                                           testing::JinaBertModelDir(),
                                           testing::ModernBertModelDir(), testing::Qwen3ModelDir(),
                                           testing::MpnetModelDir(), testing::JinaV3ModelDir()),
                         ModelDirName);

// A causal model computes a prefix its batch shares (a reranker's query part) once and attends
// each sequence's rest to the prefix's keys and values. Each sequence then equals itself alone,
// bit for bit, in every dtype, whoever shares its prefix; in fp32 it equals the whole-sequence
// computation to rounding. Prefixes differ by ids and by temperature; a prefix and a rest long
// enough to be projected head by head (4,096 rows) and, in fp32, attended on the folded path.
TEST(SharedPrefixes, EachSequenceEqualsItselfAloneAndTheWholeSequence) {
  for (const ComputeDType dtype :
       {ComputeDType::kFloat32, ComputeDType::kBFloat16, ComputeDType::kInt8}) {
    SCOPED_TRACE(ComputeDTypeName(dtype));
    ModelOptions options;
    options.encoder.dtype = dtype;
    auto model = Model::Load(testing::Qwen3ModelDir(), options);
    if (model.status().code() == absl::StatusCode::kFailedPrecondition) continue;
    ASSERT_TRUE(model.ok()) << model.status();
    std::mt19937 rng(41);
    std::uniform_int_distribution<int32_t> id(5, (*model)->config().vocab_size - 1);
    auto tokens = [&](int count) {
      std::vector<int32_t> ids(count);
      for (auto& v : ids) v = id(rng);
      return ids;
    };
    const std::vector<int32_t> query = tokens(37), other_query = tokens(90);
    const std::vector<int32_t> long_query = tokens(4100);
    struct Pair {
      const std::vector<int32_t>* prefix;
      int document;
      float tau;
    };
    const std::vector<Pair> pairs = {{&query, 1, 1.0f},         {&query, 20, 1.0f},
                                     {&other_query, 300, 0.7f}, {&query, 130, 0.7f},
                                     {&other_query, 5, 0.7f},   {&query, 4200, 1.0f},
                                     {&long_query, 50, 0.8f},   {&long_query, 9, 0.8f}};
    EncodeBatch batch;
    batch.return_hidden_states = true;
    batch.pooling = PoolingMode::kLastToken;
    for (const Pair& pair : pairs) {
      std::vector<int32_t> ids = *pair.prefix;
      const std::vector<int32_t> document = tokens(pair.document);
      ids.insert(ids.end(), document.begin(), document.end());
      batch.sequences.push_back(std::move(ids));
      batch.temperatures.push_back(pair.tau);
      batch.prefix_lengths.push_back(static_cast<int32_t>(pair.prefix->size()));
    }
    auto together = (*model)->encoder().Encode(batch);
    ASSERT_TRUE(together.ok()) << together.status();
    float worst_relative = 0;  // of fp32's split against whole, printed
    EncodeBatch whole = batch;
    whole.prefix_lengths.clear();
    auto unsplit = (*model)->encoder().Encode(whole);
    ASSERT_TRUE(unsplit.ok()) << unsplit.status();
    for (size_t i = 0; i < pairs.size(); ++i) {
      EncodeBatch one = batch;
      one.sequences = {batch.sequences[i]};
      one.temperatures = {batch.temperatures[i]};
      one.prefix_lengths = {batch.prefix_lengths[i]};
      auto alone = (*model)->encoder().Encode(one);
      ASSERT_TRUE(alone.ok()) << alone.status();
      EXPECT_EQ(alone->hidden_states[0], together->hidden_states[i]) << "pair " << i;
      EXPECT_EQ(alone->pooled[0], together->pooled[i]) << "pair " << i;
      if (dtype != ComputeDType::kFloat32) continue;
      const std::vector<float>& a = together->hidden_states[i];
      const std::vector<float>& b = unsplit->hidden_states[i];
      ASSERT_EQ(a.size(), b.size());
      float worst = 0, largest = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        worst = std::max(worst, std::abs(a[j] - b[j]));
        largest = std::max(largest, std::abs(b[j]));
      }
      EXPECT_LE(worst, 2e-5 * largest) << "pair " << i << ": " << worst << " of " << largest;
      worst_relative = std::max(worst_relative, worst / largest);
    }
    if (dtype == ComputeDType::kFloat32) {
      std::cout << "fp32 hidden states, shared prefix against whole: worst |difference| "
                << worst_relative << " of the largest value\n";
    }
  }
}

// A bidirectional model's prefix tokens attend to what follows them: nothing is shared, and
// the prefixes change nothing.
TEST(SharedPrefixes, ABidirectionalModelComputesEverySequenceWhole) {
  auto model = Model::Load(testing::TinyModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncodeBatch batch;
  batch.return_hidden_states = true;
  batch.sequences = {{2, 7, 8, 9, 10, 3}, {2, 7, 8, 11, 12, 13, 3}};
  batch.temperatures = {1.0f, 1.0f};
  auto whole = (*model)->encoder().Encode(batch);
  ASSERT_TRUE(whole.ok()) << whole.status();
  batch.prefix_lengths = {3, 3};
  auto given = (*model)->encoder().Encode(batch);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(whole->hidden_states, given->hidden_states);
}

// A sequence's task adapter is one the model has, or -1 for none; others are refused naming
// the sequence, before anything runs.
TEST(TaskAdapters, ARefusedAdapterNamesItsSequence) {
  auto model = Model::Load(testing::JinaV3ModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncodeBatch batch;
  batch.sequences = {{0, 7, 8, 2}, {0, 9, 2}};
  batch.temperatures = {1.0f, 1.0f};
  batch.adapters = {0};
  auto result = (*model)->encoder().Encode(batch);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("adapters: 1 values for 2 sequences"));
  batch.adapters = {4, 5};
  result = (*model)->encoder().Encode(batch);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("adapters[1]: 5 outside [-1, 5)"));
  batch.adapters = {-2, 0};
  result = (*model)->encoder().Encode(batch);
  EXPECT_THAT(result.status().message(), HasSubstr("adapters[0]: -2 outside [-1, 5)"));
  batch.adapters = {4, -1};  // the last task and none
  EXPECT_TRUE((*model)->encoder().Encode(batch).ok());
}

TEST(SharedPrefixes, ARefusedPrefixNamesItsSequence) {
  auto model = Model::Load(testing::Qwen3ModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncodeBatch batch;
  batch.sequences = {{7, 8, 9}, {7, 8}};
  batch.temperatures = {1.0f, 1.0f};
  batch.prefix_lengths = {2};
  auto result = (*model)->encoder().Encode(batch);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("prefix_lengths: 1 values for 2 sequences"));
  batch.prefix_lengths = {2, 2};  // nothing left after it
  result = (*model)->encoder().Encode(batch);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("prefix_lengths[1]: 2 outside [0, 2)"));
  batch.prefix_lengths = {-1, 0};
  result = (*model)->encoder().Encode(batch);
  EXPECT_THAT(result.status().message(), HasSubstr("prefix_lengths[0]: -1 outside [0, 3)"));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EncoderHeadByHead,
                         ::testing::Values(ComputeDType::kFloat32, ComputeDType::kBFloat16,
                                           ComputeDType::kInt8),
                         [](const auto& info) {
                           return std::string(ComputeDTypeName(info.param));
                         });

TEST_F(EncoderTest, TemperatureChangesTheOutput) {
  const auto seq = RandomSequence(128, 3);
  const auto result = Encode({seq, seq, seq}, {1.0f, 0.5f, 0.5f});
  EXPECT_GT(MaxAbsDiff(result.pooled[0], result.pooled[1]), 1e-3);
  EXPECT_LE(MaxAbsDiff(result.pooled[1], result.pooled[2]), 1e-6);
}

TEST_F(EncoderTest, HighFrequencyRatioMatchesItsDefinition) {
  const auto result = Encode({RandomSequence(90, 4), RandomSequence(17, 5)}, {1.0f, 0.7f});
  const int64_t dim = result.dim;
  for (size_t b = 0; b < 2; ++b) {
    const auto& h = result.hidden_states[b];
    const int64_t n = static_cast<int64_t>(h.size()) / dim;
    std::vector<double> mean(dim, 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t d = 0; d < dim; ++d) mean[d] += h[t * dim + d] / n;
    double centered = 0, total = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t d = 0; d < dim; ++d) {
        centered += std::pow(h[t * dim + d] - mean[d], 2);
        total += std::pow(h[t * dim + d], 2);
      }
    }
    EXPECT_NEAR(result.high_frequency_ratio[b], std::sqrt(centered / total), 1e-5);
  }
  // One token has no high-frequency part at all.
  EXPECT_NEAR(Encode({{2}}, {1.0f}).high_frequency_ratio[0], 0.0, 1e-6);
}

TEST_F(EncoderTest, PoolingModesFollowTheHiddenStates) {
  const auto seq = RandomSequence(40, 7);
  const auto cls = Encode({seq}, {1.0f}, PoolingMode::kCls);
  const auto max = Encode({seq}, {1.0f}, PoolingMode::kMax);
  const auto mean = Encode({seq}, {1.0f}, PoolingMode::kMean);
  const auto last = Encode({seq}, {1.0f}, PoolingMode::kLastToken);
  const auto& h = cls.hidden_states[0];
  const int64_t dim = cls.dim;
  const int64_t n = static_cast<int64_t>(h.size()) / dim;
  std::vector<float> row0(h.begin(), h.begin() + dim), col_max(dim, -1e30f), col_mean(dim, 0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t d = 0; d < dim; ++d) {
      col_max[d] = std::max(col_max[d], h[t * dim + d]);
      col_mean[d] += h[t * dim + d] / n;
    }
  }
  EXPECT_LE(MaxAbsDiff(cls.pooled[0], row0), 1e-6);
  EXPECT_LE(MaxAbsDiff(last.pooled[0], std::vector<float>(h.end() - dim, h.end())), 1e-6);
  EXPECT_LE(MaxAbsDiff(max.pooled[0], col_max), 1e-6);
  EXPECT_LE(MaxAbsDiff(mean.pooled[0], col_mean), 1e-5);
}

TEST_F(EncoderTest, NormalizeGivesUnitVectorsInTheSameDirection) {
  const auto seq = RandomSequence(33, 8);
  const auto raw = Encode({seq}, {1.0f}, PoolingMode::kMean, false);
  const auto unit = Encode({seq}, {1.0f}, PoolingMode::kMean, true);
  double norm = 0;
  for (float v : raw.pooled[0]) norm += double(v) * v;
  norm = std::sqrt(norm);
  for (size_t d = 0; d < raw.pooled[0].size(); ++d)
    EXPECT_NEAR(unit.pooled[0][d], raw.pooled[0][d] / norm, 1e-6);
}

TEST_F(EncoderTest, BadBatchesAreInvalidArgumentNamingTheField) {
  const auto& encoder = model_->encoder();
  auto expect = [&](EncodeBatch batch, const std::string& field) {
    auto result = encoder.Encode(batch);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(result.status().message(), HasSubstr(field));
  };
  expect({}, "sequences");
  expect({{{2, 3}}, {}}, "temperatures");
  expect({{{2, 3}}, {std::nanf("")}}, "temperatures[0]");
  expect({{{2, 3}}, {0.0f}}, "temperatures[0]");
  expect({{{2, 3}}, {-1.0f}}, "temperatures[0]");
  expect({{{2, 3}}, {INFINITY}}, "temperatures[0]");
  expect({{{2, 3}, {2, 999999}}, {1.0f, 1.0f}}, "sequences[1]: token id 999999");
  expect({{{}}, {1.0f}}, "sequences[0]: length 0");
  expect({{std::vector<int32_t>(513, 5)}, {1.0f}}, "outside [1, 512]");
}

// The accuracy guard every faster dtype must keep against fp32: a mixed batch at tau 1 and
// 0.5, pooled cosine >= 0.999 for bf16 and >= 0.99 for int8. bf16 must be refused (naming
// the missing CPU feature) where the CPU would only emulate it, and fp16 off a CUDA device
// (naming the device).
TEST_F(EncoderTest, FasterDTypesKeepTheirAccuracyGuard) {
  auto checkpoint = Checkpoint::Open(testing::TinyModelDir());
  ASSERT_TRUE(checkpoint.ok());
  auto spec = FindFamily("bert");
  ASSERT_TRUE(spec.ok());
  for (auto [dtype, guard] :
       {std::pair{ComputeDType::kBFloat16, 0.999}, std::pair{ComputeDType::kInt8, 0.99},
        std::pair{ComputeDType::kFloat16, 0.999}}) {
    SCOPED_TRACE(ComputeDTypeName(dtype));
    EncoderOptions options;
    options.dtype = dtype;
    auto fast = Encoder::Create(model_->config(), **spec, **checkpoint, options);
    if (dtype == ComputeDType::kFloat16 && !options.device.cuda) {
      EXPECT_EQ(fast.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(fast.status().message(),
                  AllOf(HasSubstr("fp16 runs on a CUDA device only"), HasSubstr("on cpu")));
      continue;
    }
    if (dtype == ComputeDType::kBFloat16 && !CpuHasNativeBf16()) {
      EXPECT_EQ(fast.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(fast.status().message(), HasSubstr("avx512_bf16"));
      continue;
    }
    ASSERT_TRUE(fast.ok()) << fast.status();
    EXPECT_EQ((*fast)->dtype(), dtype);
    for (float tau : {1.0f, 0.5f}) {
      // Real text: random ids passed int8 with bf16 attention that real text failed.
      auto probe = GuardProbe(model_->tokenizer(), model_->encoder().max_sequence_length());
      ASSERT_TRUE(probe.ok()) << probe.status();
      EncodeBatch batch{*probe, std::vector<float>(probe->size(), tau), PoolingMode::kMean, true,
                        false};
      auto low = (*fast)->Encode(batch);
      auto full = model_->encoder().Encode(batch);
      ASSERT_TRUE(low.ok() && full.ok());
      for (size_t b = 0; b < batch.sequences.size(); ++b) {
        double dot = 0;
        for (size_t d = 0; d < low->pooled[b].size(); ++d)
          dot += low->pooled[b][d] * full->pooled[b][d];
        EXPECT_GE(dot, guard) << "sequence " << b << " at tau " << tau;
        EXPECT_LT(dot, 1.0 - 1e-9) << "sequence " << b << " equals fp32: dtype not applied";
      }
    }
  }
}

TEST_F(EncoderTest, AutoIsNotAnEncoderDType) {
  auto checkpoint = Checkpoint::Open(testing::TinyModelDir());
  auto spec = FindFamily("bert");
  ASSERT_TRUE(checkpoint.ok() && spec.ok());
  EncoderOptions options;
  options.dtype = ComputeDType::kAuto;
  auto encoder = Encoder::Create(model_->config(), **spec, **checkpoint, options);
  EXPECT_EQ(encoder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(encoder.status().message(), HasSubstr("dtype auto"));
}

}  // namespace
}  // namespace embedding::model_store
