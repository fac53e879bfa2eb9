// TEMPERATURE_MODE_AUTO against a real server: a schedule of ones is bit-identical to tau = 1;
// every encoded sequence gets the schedule's tau at its own length (checked in the response and
// by recomputing the vectors with the encoder in process); AUTO's errors; the schedule in
// GetModelInfo; on a model with banded layers (ModernBERT), those layers' own tau.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "client/embedding_client.h"
#include "model_store/model.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using client::EmbedOptions;
using ::testing::HasSubstr;

// tau 1 below 8 content tokens, 0.8 from 8, 0.5 from 20.
constexpr char kSchedule[] = R"({"schedule": {"form": "piecewise", "points": [
  {"min_tokens": 0, "tau": 1.0}, {"min_tokens": 8, "tau": 0.8}, {"min_tokens": 20, "tau": 0.5}]},
  "source": "auto_temperature_test"})";
constexpr char kOnes[] = R"({"schedule": {"form": "piecewise",
  "points": [{"min_tokens": 0, "tau": 1.0}]}})";

float Scheduled(size_t tokens) { return tokens >= 20 ? 0.5f : tokens >= 8 ? 0.8f : 1.0f; }

// AUTO when `tau` is unset, else FIXED at `tau`.
EmbedOptions Options(const std::string& model, std::optional<float> tau,
                     v1::LongTextStrategy strategy = v1::LONG_TEXT_STRATEGY_UNSPECIFIED,
                     std::optional<uint32_t> chunk_tokens = std::nullopt) {
  EmbedOptions options;
  options.model = model;
  options.temperature = tau;
  if (!tau) options.temperature_mode = v1::TEMPERATURE_MODE_AUTO;
  options.strategy = strategy;
  options.chunk_tokens = chunk_tokens;
  return options;
}

class AutoTemperatureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string scheduled = testing::CopyModelDir(testing::TinyModelDir(), "scheduled");
    testing::WriteFile(scheduled + "/tempscale.json", kSchedule);
    const std::string ones = testing::CopyModelDir(testing::TinyModelDir(), "ones");
    testing::WriteFile(ones + "/tempscale.json", kOnes);
    // Bands of +-64 keys: a banded row sees at most 129 keys, so AUTO gives those layers the
    // schedule at 129 however long the sequence.
    const std::string banded = testing::CopyModelDir(testing::ModernBertModelDir(), "banded");
    testing::WriteFile(banded + "/tempscale.json", R"({"schedule": {"form": "piecewise",
      "points": [{"min_tokens": 0, "tau": 1.0}, {"min_tokens": 100, "tau": 0.8},
                 {"min_tokens": 200, "tau": 0.5}]}})");
    server_ = new testing::ServerProcess({"--model=scheduled=" + scheduled, "--model=ones=" + ones,
                                          "--model=plain=" + testing::TinyModelDir(),
                                          "--model=banded=" + banded});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
    model_ = model_store::Model::Load(scheduled, {}).value().release();
    banded_ = model_store::Model::Load(banded, {}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
    delete model_;
    delete banded_;
  }

  static absl::StatusOr<v1::EmbedResponse> Embed(const std::vector<std::string>& texts,
                                                 EmbedOptions options) {
    return client_->Embed(client::MakeEmbedRequest(texts, options));
  }

  // The encoder's own mean-pooled, L2-normalised vector of content ids at `tau` (banded
  // layers at `local_tau` when given).
  static std::vector<double> Reference(const std::vector<int32_t>& content, float tau,
                                       std::optional<float> local_tau = std::nullopt,
                                       const model_store::Model* model = model_) {
    const std::vector<int32_t> ids = model->tokenizer().AddSpecialTokens(content);
    model_store::EncodeBatch batch{{ids}, {tau}, model_store::PoolingMode::kMean, false, false};
    if (local_tau) batch.local_temperatures = {*local_tau};
    auto result = model->encoder().Encode(batch);
    EXPECT_TRUE(result.ok()) << result.status();
    std::vector<double> v(result->pooled[0].begin(), result->pooled[0].end());
    double norm = 0;
    for (double x : v) norm += x * x;
    for (double& x : v) x /= std::sqrt(norm);
    return v;
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
  static model_store::Model* model_;
  static model_store::Model* banded_;
};
testing::ServerProcess* AutoTemperatureTest::server_ = nullptr;
client::EmbeddingClient* AutoTemperatureTest::client_ = nullptr;
model_store::Model* AutoTemperatureTest::model_ = nullptr;
model_store::Model* AutoTemperatureTest::banded_ = nullptr;

const char kText[] =
    "the cat sat on the mat and the dog ran to the big red sun in the sky of the old town "
    "while we go on and on to the end of the long road home";

TEST_F(AutoTemperatureTest, ScheduleOfOnesIsBitIdenticalToTauOne) {
  for (auto strategy : {v1::LONG_TEXT_STRATEGY_CHUNK_ALL, v1::LONG_TEXT_STRATEGY_LATE_CHUNKING}) {
    auto a = Embed({kText, "a", ""}, Options("ones", 1.0f, strategy, 7));
    auto b = Embed({kText, "a", ""}, Options("ones", std::nullopt, strategy, 7));
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_EQ(b->temperature_mode(), v1::TEMPERATURE_MODE_AUTO);
    for (int d = 0; d < 3; ++d) {
      const auto& x = a->documents(d);
      const auto& y = b->documents(d);
      ASSERT_EQ(x.vector_size(), y.vector_size());
      for (int i = 0; i < x.vector_size(); ++i)
        ASSERT_EQ(x.vector(i), y.vector(i)) << d << "/" << i;
      ASSERT_EQ(x.chunks_size(), y.chunks_size());
      for (int c = 0; c < x.chunks_size(); ++c)
        for (int i = 0; i < x.chunks(c).vector_size(); ++i)
          ASSERT_EQ(x.chunks(c).vector(i), y.chunks(c).vector(i));
    }
  }
}

TEST_F(AutoTemperatureTest, EachChunkGetsTheScheduleAtItsOwnLength) {
  auto tokens = model_->tokenizer().Tokenize(kText);
  ASSERT_TRUE(tokens.ok());
  const size_t n = tokens->ids.size();
  ASSERT_GT(n, 30u);
  auto response = Embed({kText, "a cat"},
                        Options("scheduled", std::nullopt, v1::LONG_TEXT_STRATEGY_CHUNK_ALL, 22));
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::DocumentEmbedding& doc = response->documents(0);
  ASSERT_EQ(doc.chunks_size(), static_cast<int>((n + 21) / 22));
  ASSERT_EQ(doc.sequence_temperatures_size(), doc.chunks_size());
  for (int c = 0; c < doc.chunks_size(); ++c) {
    const v1::ChunkEmbedding& chunk = doc.chunks(c);
    const size_t length = chunk.token_span().end() - chunk.token_span().start();
    SCOPED_TRACE(::testing::Message() << "chunk " << c << " of " << length << " tokens");
    EXPECT_FLOAT_EQ(chunk.temperature(), Scheduled(length));
    EXPECT_FLOAT_EQ(doc.sequence_temperatures(c), Scheduled(length));
    const std::vector<int32_t> content(tokens->ids.begin() + chunk.token_span().start(),
                                       tokens->ids.begin() + chunk.token_span().end());
    const std::vector<double> want = Reference(content, Scheduled(length));
    ASSERT_EQ(chunk.vector_size(), static_cast<int>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(chunk.vector(i), want[i], 1e-5) << i;
  }
  // The last chunk is shorter than the others: it must not share their tau.
  EXPECT_NE(doc.chunks(doc.chunks_size() - 1).temperature(), doc.chunks(0).temperature());
  EXPECT_FLOAT_EQ(doc.temperature(), doc.sequence_temperatures(0));
  // A two-token text takes the shortest point: tau = 1.
  EXPECT_FLOAT_EQ(response->documents(1).temperature(), 1.0f);
  auto short_tokens = model_->tokenizer().Tokenize("a cat");
  const std::vector<double> want = Reference(short_tokens->ids, 1.0f);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(response->documents(1).vector(i), want[i], 1e-5);
}

// Global layers take the schedule at the sequence's length (300 tokens: 0.5), banded layers at
// the 129 keys a row of theirs sees (0.8); FIXED gives both the request's tau.
TEST_F(AutoTemperatureTest, BandedLayersTakeTheScheduleAtTheirBand) {
  std::string text;
  while (true) {
    auto tokens = banded_->tokenizer().Tokenize(text);
    if (tokens->ids.size() >= 300) break;
    text += std::string(kText) + " ";
  }
  auto content = banded_->tokenizer().Tokenize(text);
  ASSERT_TRUE(content.ok());
  auto response = Embed({text, "a cat"}, Options("banded", std::nullopt));
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::DocumentEmbedding& doc = response->documents(0);
  ASSERT_EQ(doc.sequence_temperatures_size(), 1);
  EXPECT_FLOAT_EQ(doc.sequence_temperatures(0), 0.5f);
  ASSERT_EQ(doc.sequence_local_temperatures_size(), 1);
  EXPECT_FLOAT_EQ(doc.sequence_local_temperatures(0), 0.8f);
  const std::vector<double> want = Reference(content->ids, 0.5f, 0.8f, banded_);
  const std::vector<double> all_half = Reference(content->ids, 0.5f, std::nullopt, banded_);
  ASSERT_EQ(doc.vector_size(), static_cast<int>(want.size()));
  double from_all_half = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(doc.vector(i), want[i], 1e-5) << i;
    from_all_half = std::max(from_all_half, std::abs(doc.vector(i) - all_half[i]));
  }
  EXPECT_GT(from_all_half, 1e-3) << "the banded layers' tau made no difference";
  // A short text is under the band: both kinds take the schedule at its length.
  EXPECT_FLOAT_EQ(response->documents(1).sequence_local_temperatures(0),
                  response->documents(1).sequence_temperatures(0));
  auto fixed = Embed({text}, Options("banded", 0.7f));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_FLOAT_EQ(fixed->documents(0).sequence_local_temperatures(0), 0.7f);
  // A model whose layers are all global reports none.
  auto plain = Embed({text}, Options("plain", std::nullopt));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->documents(0).sequence_local_temperatures_size(), 0);
}

TEST_F(AutoTemperatureTest, AutoRefusesATauOfItsOwnAndUnknownModes) {
  EmbedOptions both = Options("scheduled", 0.5f);
  both.temperature_mode = v1::TEMPERATURE_MODE_AUTO;
  auto refused = Embed({"x"}, both);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("temperature: must be unset"));
  v1::EmbedRequest request = client::MakeEmbedRequest({"x"}, {});
  request.set_temperature_mode(static_cast<v1::TemperatureMode>(7));
  auto unknown = client_->Embed(request);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("temperature_mode"));
}

TEST_F(AutoTemperatureTest, ModelInfoReportsTheScheduleAndItsSource) {
  auto info = client_->GetModelInfo("scheduled");
  ASSERT_TRUE(info.ok()) << info.status();
  const v1::TempScaleSchedule& schedule = info->tempscale_schedule();
  EXPECT_EQ(schedule.form(), "piecewise");
  ASSERT_EQ(schedule.points_size(), 3);
  EXPECT_EQ(schedule.points(1).min_tokens(), 8u);
  EXPECT_FLOAT_EQ(schedule.points(2).tau(), 0.5f);
  EXPECT_THAT(schedule.source(), HasSubstr("tempscale.json: auto_temperature_test"));
  auto plain = client_->GetModelInfo("plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->tempscale_schedule().form(), "none");
  EXPECT_THAT(plain->tempscale_schedule().source(), HasSubstr("AUTO applies tau = 1"));
}

}  // namespace
}  // namespace embedding
