// The Embed API checked by value against a real server: every long-text strategy, spans,
// prompts, dimensions, and batching (concurrent mixed-tau requests equal sequential ones).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <random>
#include <thread>

#include "client/embedding_client.h"
#include "model_store/model.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using client::EmbedOptions;
using ::testing::HasSubstr;

constexpr double kTolerance = 1e-5;

class EmbedValuesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess({"--model=tiny=" + testing::TinyModelDir()});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
    model_ = model_store::Model::Load(testing::TinyModelDir(), {}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
    delete model_;
  }

  static std::string Words(int n, int seed) { return testing::SingleTokenWords(n, seed); }

  static v1::EmbedResponse Embed(const std::string& text, EmbedOptions options) {
    auto response = client_->Embed(client::MakeEmbedRequest({text}, options));
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? *response : v1::EmbedResponse();
  }

  static std::vector<float> Vec(const google::protobuf::RepeatedField<float>& v) {
    return {v.begin(), v.end()};
  }

  static void Normalize(std::vector<double>* v) {
    double n = 0;
    for (double x : *v) n += x * x;
    for (double& x : *v) x /= std::sqrt(n);
  }

  static void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                          double tol = kTolerance) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "index " << i;
  }

  // The model core's own mean of hidden-state rows [first, last) of `ids` (with specials).
  static std::vector<double> CoreMean(const std::vector<int32_t>& ids, size_t first, size_t last,
                                      float tau) {
    model_store::EncodeBatch batch{{ids}, {tau}, model_store::PoolingMode::kMean, false, true};
    auto result = model_->encoder().Encode(batch);
    EXPECT_TRUE(result.ok());
    const size_t dim = result->dim;
    std::vector<double> mean(dim, 0.0);
    for (size_t row = first; row < last; ++row)
      for (size_t d = 0; d < dim; ++d) mean[d] += result->hidden_states[0][row * dim + d];
    for (double& x : mean) x /= static_cast<double>(last - first);
    return mean;
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
  static model_store::Model* model_;
};
testing::ServerProcess* EmbedValuesTest::server_ = nullptr;
client::EmbeddingClient* EmbedValuesTest::client_ = nullptr;
model_store::Model* EmbedValuesTest::model_ = nullptr;

TEST_F(EmbedValuesTest, ChunkMergesAreComputedFromTheChunkVectors) {
  const std::string doc = Words(1300, 1);
  EmbedOptions options;
  options.chunk_tokens = 200;
  options.chunk_overlap_tokens = 50;
  options.temperature = 0.7f;
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_ALL;
  const auto all = Embed(doc, options).documents(0);
  ASSERT_GT(all.chunks_size(), 5);
  const size_t dim = all.chunks(0).vector_size();
  std::vector<double> mean(dim, 0), weighted(dim, 0), max(dim, -1e9);
  double total_weight = 0;
  for (const auto& chunk : all.chunks()) {
    const double w = chunk.token_span().end() - chunk.token_span().start();
    total_weight += w;
    for (size_t d = 0; d < dim; ++d) {
      mean[d] += chunk.vector(d);
      weighted[d] += w * chunk.vector(d);
      max[d] = std::max<double>(max[d], chunk.vector(d));
    }
  }
  Normalize(&mean);
  Normalize(&weighted);
  Normalize(&max);
  ExpectClose(Vec(all.vector()), mean);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MEAN;
  ExpectClose(Vec(Embed(doc, options).documents(0).vector()), mean);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN;
  ExpectClose(Vec(Embed(doc, options).documents(0).vector()), weighted);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MAX;
  ExpectClose(Vec(Embed(doc, options).documents(0).vector()), max);
  // The last chunk is short here, so weighting must differ from the plain mean.
  double diff = 0;
  for (size_t d = 0; d < dim; ++d) diff = std::max(diff, std::abs(mean[d] - weighted[d]));
  EXPECT_GT(diff, 1e-4);
}

TEST_F(EmbedValuesTest, ChunkSpansCoverTheDocumentWithTheRequestedOverlap) {
  const std::string doc = "Ünïcode first: " + Words(1000, 2) + " 中文 end.";
  v1::TokenizeRequest tokenize;
  tokenize.add_inputs(doc);
  tokenize.set_add_special_tokens(false);
  const auto tokens = client_->Tokenize(tokenize).value().inputs(0).tokens();
  for (uint32_t overlap : {0u, 37u}) {
    EmbedOptions options;
    options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_ALL;
    options.chunk_tokens = 128;
    options.chunk_overlap_tokens = overlap;
    const auto result = Embed(doc, options).documents(0);
    EXPECT_EQ(result.token_count(), static_cast<uint32_t>(tokens.size()));
    EXPECT_EQ(result.chunk_count(), static_cast<uint32_t>(result.chunks_size()));
    ASSERT_GT(result.chunks_size(), 1);
    EXPECT_EQ(result.chunks(0).token_span().start(), 0u);
    EXPECT_EQ(result.chunks(result.chunks_size() - 1).token_span().end(), result.token_count());
    for (int c = 0; c < result.chunks_size(); ++c) {
      const auto& chunk = result.chunks(c);
      const uint32_t begin = chunk.token_span().start(), end = chunk.token_span().end();
      EXPECT_LE(end - begin, 128u);
      if (c + 1 < result.chunks_size()) {
        EXPECT_EQ(end - begin, 128u);
        EXPECT_EQ(result.chunks(c + 1).token_span().start(), end - overlap);
      }
      EXPECT_EQ(chunk.char_span().start(), tokens[begin].char_span().start());
      EXPECT_EQ(chunk.char_span().end(), tokens[end - 1].char_span().end());
      EXPECT_EQ(chunk.byte_span().start(), tokens[begin].byte_span().start());
      EXPECT_EQ(chunk.byte_span().end(), tokens[end - 1].byte_span().end());
    }
  }
}

TEST_F(EmbedValuesTest, TruncateEqualsTheFirstOrLastWindowAlone) {
  const std::string doc = Words(900, 3);  // one token per word
  const int window = client_->GetModelInfo().value().max_window_tokens();
  ASSERT_EQ(window, 510);
  EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;
  options.temperature = 0.5f;
  const auto start = Embed(doc, options).documents(0);
  EXPECT_TRUE(start.truncated());
  EXPECT_EQ(start.chunk_count(), 1u);
  options.truncation_side = v1::TRUNCATION_SIDE_KEEP_END;
  const auto end = Embed(doc, options).documents(0);

  // The same windows sent as their own text, which needs no truncation.
  std::vector<std::string> words;
  std::stringstream ss(doc);
  for (std::string w; ss >> w;) words.push_back(w);
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i) s += (i > from ? " " : "") + words[i];
    return s;
  };
  EmbedOptions plain;
  plain.strategy = v1::LONG_TEXT_STRATEGY_REJECT;
  plain.temperature = 0.5f;
  const auto first = Embed(join(0, window), plain).documents(0);
  const auto last = Embed(join(words.size() - window, words.size()), plain).documents(0);
  EXPECT_FALSE(first.truncated());
  ExpectClose(Vec(start.vector()),
              std::vector<double>(first.vector().begin(), first.vector().end()));
  ExpectClose(Vec(end.vector()), std::vector<double>(last.vector().begin(), last.vector().end()));
}

TEST_F(EmbedValuesTest, LateChunkingChunksAreMeansOfTheirSpansTokenStates) {
  const auto& tokenizer = model_->tokenizer();
  // One window: every chunk pools rows of the same forward pass.
  const std::string doc = Words(300, 4);
  EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  options.chunk_tokens = 64;
  options.temperature = 0.8f;
  const auto result = Embed(doc, options).documents(0);
  const auto ids = tokenizer.AddSpecialTokens(tokenizer.Tokenize(doc)->ids);
  ASSERT_EQ(result.chunks_size(), 5);
  for (const auto& chunk : result.chunks()) {
    auto want = CoreMean(ids, 1 + chunk.token_span().start(), 1 + chunk.token_span().end(), 0.8f);
    Normalize(&want);
    ExpectClose(Vec(chunk.vector()), want);
  }
}

TEST_F(EmbedValuesTest, LateChunkingAcrossWindowsTakesEachTokenFromItsMostCentralWindow) {
  const auto& tokenizer = model_->tokenizer();
  const std::string doc = Words(1200, 5);
  const auto content = tokenizer.Tokenize(doc)->ids;
  const size_t n = content.size(), window = 510, stride = window - window / 4;
  // Independent reading of the rule: full windows every `stride`, the last ending at n.
  std::vector<size_t> starts;
  for (size_t s = 0;; s += stride) {
    starts.push_back(std::min(s, n - window));
    if (starts.back() + window >= n) break;
  }
  std::vector<std::vector<float>> states;  // per window, rows incl. specials
  size_t dim = 0;
  for (size_t s : starts) {
    std::vector<int32_t> piece(content.begin() + s, content.begin() + s + window);
    model_store::EncodeBatch batch{
        {tokenizer.AddSpecialTokens(piece)}, {1.0f}, model_store::PoolingMode::kMean, false, true};
    auto r = model_->encoder().Encode(batch);
    ASSERT_TRUE(r.ok());
    dim = r->dim;
    states.push_back(r->hidden_states[0]);
  }
  EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  options.chunk_tokens = 100;
  options.chunk_overlap_tokens = 10;
  const auto result = Embed(doc, options).documents(0);
  ASSERT_GT(starts.size(), 2u);
  for (const auto& chunk : result.chunks()) {
    std::vector<double> want(dim, 0.0);
    for (size_t t = chunk.token_span().start(); t < chunk.token_span().end(); ++t) {
      size_t best = 0;
      int64_t best_margin = -1;
      for (size_t w = 0; w < starts.size(); ++w) {
        if (t < starts[w] || t >= starts[w] + window) continue;
        const int64_t margin = std::min<int64_t>(t - starts[w], starts[w] + window - 1 - t);
        if (margin >= best_margin) best = w, best_margin = margin;
      }
      for (size_t d = 0; d < dim; ++d) want[d] += states[best][(1 + t - starts[best]) * dim + d];
    }
    Normalize(&want);
    ExpectClose(Vec(chunk.vector()), want);
  }
}

TEST_F(EmbedValuesTest, EmptyStringIsTheVectorOfClsSep) {
  EmbedOptions options;
  options.temperature = 0.6f;
  const auto doc = Embed("", options).documents(0);
  EXPECT_EQ(doc.token_count(), 0u);
  EXPECT_EQ(doc.chunk_count(), 1u);
  EXPECT_EQ(doc.length_bucket(), "0-63");
  auto want = CoreMean(model_->tokenizer().AddSpecialTokens({}), 0, 2, 0.6f);  // mean pooling
  Normalize(&want);
  ExpectClose(Vec(doc.vector()), want);
}

TEST_F(EmbedValuesTest, ResponseCarriesMetadataUsageAndTimings) {
  EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MEAN;
  options.temperature = 0.9f;
  auto response = client_->Embed(client::MakeEmbedRequest({Words(70, 6), Words(1100, 7)}, options));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->model(), "tiny");
  EXPECT_EQ(response->model_version().size(), 16u);
  EXPECT_EQ(response->strategy(), v1::LONG_TEXT_STRATEGY_CHUNK_MEAN);
  ASSERT_EQ(response->documents_size(), 2);
  EXPECT_EQ(response->documents(0).token_count(), 70u);
  EXPECT_EQ(response->documents(0).length_bucket(), "64-127");
  EXPECT_EQ(response->documents(1).token_count(), 1100u);
  EXPECT_EQ(response->documents(1).length_bucket(), "1024-2047");
  EXPECT_EQ(response->documents(1).chunk_count(), 3u);  // 510 + 510 + 80
  EXPECT_FLOAT_EQ(response->documents(1).temperature(), 0.9f);
  EXPECT_FALSE(response->documents(1).truncated());
  EXPECT_EQ(response->documents(1).chunks_size(), 0);  // only CHUNK_ALL returns chunks
  EXPECT_EQ(response->usage().documents(), 2u);
  EXPECT_EQ(response->usage().tokens(), 1170u);
  EXPECT_EQ(response->usage().sequences(), 4u);
  EXPECT_EQ(response->usage().sequence_tokens(), 1170u + 4 * 2);
  EXPECT_GT(response->timings().inference_seconds(), 0);
  EXPECT_GE(response->timings().total_seconds(), response->timings().inference_seconds());
  double norm = 0;
  for (float x : response->documents(1).vector()) norm += x * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

TEST_F(EmbedValuesTest, DimensionsTruncateThenRenormalise) {
  const std::string doc = Words(40, 8);
  const auto full = Vec(Embed(doc, {}).documents(0).vector());
  EmbedOptions options;
  options.dimensions = 16;
  const auto cut = Vec(Embed(doc, options).documents(0).vector());
  std::vector<double> want(full.begin(), full.begin() + 16);
  Normalize(&want);
  ExpectClose(cut, want);
}

TEST_F(EmbedValuesTest, NormalizeFalseReturnsTheRawPooledVector) {
  const std::string doc = Words(30, 9);
  EmbedOptions options;
  options.normalize = false;
  const auto raw = Vec(Embed(doc, options).documents(0).vector());
  const auto ids = model_->tokenizer().AddSpecialTokens(model_->tokenizer().Tokenize(doc)->ids);
  ExpectClose(raw, CoreMean(ids, 0, ids.size(), 1.0f));
}

TEST_F(EmbedValuesTest, PromptNameEqualsThePromptTextPrepended) {
  const std::string doc = Words(20, 10);
  EmbedOptions named;
  named.prompt_name = "query";
  const auto with_name = Vec(Embed(doc, named).documents(0).vector());
  const auto by_hand = Embed("query: " + doc, {}).documents(0);
  ExpectClose(with_name, std::vector<double>(by_hand.vector().begin(), by_hand.vector().end()));
}

TEST_F(EmbedValuesTest, ConcurrentMixedTemperaturesEqualSequentialRequests) {
  struct Case {
    std::string text;
    float tau;
    v1::LongTextStrategy strategy;
  };
  std::vector<Case> cases;
  const float taus[] = {1.0f, 0.7f, 0.5f, 1.3f};
  const v1::LongTextStrategy strategies[] = {v1::LONG_TEXT_STRATEGY_CHUNK_MEAN,
                                             v1::LONG_TEXT_STRATEGY_LATE_CHUNKING,
                                             v1::LONG_TEXT_STRATEGY_TRUNCATE};
  for (int i = 0; i < 24; ++i)
    cases.push_back({Words(5 + (i * 97) % 1400, 100 + i), taus[i % 4], strategies[i % 3]});
  auto run = [&](const Case& c) {
    EmbedOptions options;
    options.temperature = c.tau;
    options.strategy = c.strategy;
    return Vec(Embed(c.text, options).documents(0).vector());
  };
  std::vector<std::vector<float>> sequential;
  for (const auto& c : cases) sequential.push_back(run(c));
  std::vector<std::future<std::vector<float>>> concurrent;
  for (const auto& c : cases) concurrent.push_back(std::async(std::launch::async, run, c));
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = concurrent[i].get();
    ExpectClose(got, std::vector<double>(sequential[i].begin(), sequential[i].end()));
  }
}

TEST_F(EmbedValuesTest, TokenizeReportsIdsTokensAndOffsets) {
  v1::TokenizeRequest request;
  request.add_inputs("Héllo, 中文 🙂!");
  auto response = client_->Tokenize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const auto& tokens = response->inputs(0).tokens();
  ASSERT_GE(tokens.size(), 4);
  EXPECT_EQ(tokens[0].text(), "[CLS]");
  EXPECT_TRUE(tokens[0].special());
  EXPECT_EQ(tokens[tokens.size() - 1].text(), "[SEP]");
  EXPECT_EQ(tokens[1].text(), "hello");
  EXPECT_EQ(tokens[1].char_span().start(), 0u);
  EXPECT_EQ(tokens[1].char_span().end(), 5u);
  EXPECT_EQ(tokens[1].byte_span().end(), 6u);  // é is two bytes
  const std::vector<int32_t> content = model_->tokenizer().Tokenize("Héllo, 中文 🙂!")->ids;
  ASSERT_EQ(static_cast<size_t>(tokens.size()), content.size() + 2);
  for (size_t i = 0; i < content.size(); ++i) EXPECT_EQ(tokens[i + 1].id(), content[i]);
}

TEST_F(EmbedValuesTest, ModelsAreDescribed) {
  auto list = client_->ListModels();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->default_model(), "tiny");
  ASSERT_EQ(list->models_size(), 1);
  const auto& info = list->models(0);
  EXPECT_EQ(info.name(), "tiny");
  EXPECT_EQ(info.architecture(), "bert");
  EXPECT_EQ(info.dimensions(), 96u);
  EXPECT_EQ(info.max_positions(), 512u);
  EXPECT_EQ(info.max_window_tokens(), 510u);
  EXPECT_EQ(info.pooling(), "mean");
  EXPECT_EQ(info.dtype(), "fp32");
  EXPECT_EQ(info.device(), "cpu");
  EXPECT_FLOAT_EQ(info.default_temperature(), 1.0f);
  EXPECT_EQ(info.strategies_size(), 7);
  EXPECT_TRUE(info.demo());
  EXPECT_THAT(std::vector<std::string>(info.prompt_names().begin(), info.prompt_names().end()),
              ::testing::ElementsAre("passage", "query"));
  auto missing = client_->GetModelInfo("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("tiny"));
}

}  // namespace
}  // namespace embedding
