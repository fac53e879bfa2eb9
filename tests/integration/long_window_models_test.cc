// The long-window architectures end to end: XLM-RoBERTa (Unigram tokenizer), NomicBert (rotary
// positions), GTE (rotary with fixed NTK) and JinaBERT v2 (ALiBi), 8,192 tokens per window,
// served by one real server. Every strategy is
// checked by value against the model core run in this process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "client/embedding_client.h"
#include "tests/testing/model_core.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"
#include "tests/testing/vector_checks.h"

namespace embedding {
namespace {

using client::EmbedOptions;
using testing::MeanRows;
using testing::Normalize;

// Served vectors against the core's, to float rounding.
void ExpectClose(const google::protobuf::RepeatedField<float>& got,
                 const std::vector<double>& want) {
  testing::ExpectClose(got, want, 2e-5);
}

struct Family {
  std::string name;  // served model name
  std::string dir;
  std::string architecture;
  std::string first_token, last_token;
};

void PrintTo(const Family& family, std::ostream* os) { *os << family.name; }

class LongWindowModelsTest : public ::testing::TestWithParam<Family> {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess({"--model=xlmr=" + testing::XlmRobertaModelDir(),
                                          "--model=nomic=" + testing::NomicBertModelDir(),
                                          "--model=gte=" + testing::GteModelDir(),
                                          "--model=jina=" + testing::JinaBertModelDir(),
                                          "--model=modernbert=" + testing::ModernBertModelDir()});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
  }

  void SetUp() override {
    core_ = std::make_unique<testing::ModelCore>(GetParam().dir);
    ASSERT_TRUE(core_->ok());
  }

  std::vector<int32_t> Content(const std::string& text) const { return core_->Content(text); }

  // The core's hidden states of `content` wrapped in special tokens, one forward.
  std::vector<float> States(const std::vector<int32_t>& content, float tau, int64_t* dim) const {
    return core_->States(core_->WithSpecialTokens(content), tau, dim);
  }

  v1::DocumentEmbedding EmbedOne(const std::string& text, EmbedOptions options) const {
    return testing::EmbedOne(*client_, GetParam().name, text, options);
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
  std::unique_ptr<testing::ModelCore> core_;
};
testing::ServerProcess* LongWindowModelsTest::server_ = nullptr;
client::EmbeddingClient* LongWindowModelsTest::client_ = nullptr;

TEST_P(LongWindowModelsTest, ModelInfoDescribesAnEightThousandTokenWindow) {
  auto info = client_->GetModelInfo(GetParam().name);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->architecture(), GetParam().architecture);
  EXPECT_EQ(info->max_positions(), 8192u);
  EXPECT_EQ(info->max_window_tokens(), 8190u);
  EXPECT_EQ(info->pooling(), "mean");
  EXPECT_FALSE(info->causal());
  EXPECT_EQ(info->pooled_token(), "");
}

TEST_P(LongWindowModelsTest, TokenizeIsTheModelsTokenizerWithItsSpecialTokens) {
  const std::string text = "Multilingual: Straße, Привет, 中文, emoji 👍🏽 end";
  v1::TokenizeRequest request;
  request.set_model(GetParam().name);
  request.add_inputs(text);
  auto response = client_->Tokenize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const auto& tokens = response->inputs(0).tokens();
  const auto content = Content(text);
  ASSERT_EQ(static_cast<size_t>(tokens.size()), content.size() + 2);
  EXPECT_EQ(tokens[0].text(), GetParam().first_token);
  EXPECT_EQ(tokens[tokens.size() - 1].text(), GetParam().last_token);
  for (size_t i = 0; i < content.size(); ++i) EXPECT_EQ(tokens[i + 1].id(), content[i]);
}

// Late chunking inside one full window: every chunk pools rows of the same 8,190-token forward.
TEST_P(LongWindowModelsTest, LateChunkingOverOneFullWindowPoolsOneForward) {
  const std::string doc = core_->TextOfAbout(8190, 1);
  const auto content = Content(doc);
  ASSERT_GT(content.size(), 8180u);
  ASSERT_LE(content.size(), 8190u);
  EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  options.chunk_tokens = 1024;
  options.temperature = 0.7f;
  const auto result = EmbedOne(doc, options);
  EXPECT_EQ(result.token_count(), content.size());
  ASSERT_EQ(result.chunks_size(), static_cast<int>((content.size() + 1023) / 1024));
  int64_t dim = 0;
  const auto states = States(content, 0.7f, &dim);
  for (const auto& chunk : result.chunks()) {
    ExpectClose(chunk.vector(), MeanRows(states, dim, 1 + chunk.token_span().start(),
                                         1 + chunk.token_span().end()));
  }
}

// A document longer than the window: chunk vectors are the core's chunks, merges follow from
// them, truncation is the first full window. (Chunks of 4,096 keep the test quick: attention
// costs grow with the square of the chunk.)
TEST_P(LongWindowModelsTest, EveryStrategyOnADocumentLongerThanTheWindow) {
  const std::string doc = core_->TextOfAbout(9500, 2);
  const auto content = Content(doc);
  ASSERT_GT(content.size(), 9000u);
  EmbedOptions options;
  options.temperature = 0.5f;
  options.chunk_tokens = 4096;
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_ALL;
  const auto all = EmbedOne(doc, options);
  ASSERT_EQ(all.chunks_size(), 3);
  std::vector<std::vector<double>> chunks;
  int64_t dim = 0;
  for (const auto& chunk : all.chunks()) {
    const std::vector<int32_t> piece(content.begin() + chunk.token_span().start(),
                                     content.begin() + chunk.token_span().end());
    const auto states = States(piece, 0.5f, &dim);
    chunks.push_back(MeanRows(states, dim, 0, piece.size() + 2));
    ExpectClose(chunk.vector(), chunks.back());
  }
  std::vector<double> mean(dim, 0), weighted(dim, 0), max(dim, -1e9);
  for (int c = 0; c < 3; ++c) {
    const double w = all.chunks(c).token_span().end() - all.chunks(c).token_span().start();
    for (int64_t d = 0; d < dim; ++d) {
      mean[d] += chunks[c][d];
      weighted[d] += w * chunks[c][d];
      max[d] = std::max(max[d], chunks[c][d]);
    }
  }
  Normalize(&mean);
  Normalize(&weighted);
  Normalize(&max);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MEAN;
  ExpectClose(EmbedOne(doc, options).vector(), mean);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN;
  ExpectClose(EmbedOne(doc, options).vector(), weighted);
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MAX;
  ExpectClose(EmbedOne(doc, options).vector(), max);

  EmbedOptions window;
  window.temperature = 0.5f;
  window.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;
  const auto truncated = EmbedOne(doc, window);
  EXPECT_TRUE(truncated.truncated());
  const std::vector<int32_t> first(content.begin(), content.begin() + 8190);
  const auto first_states = States(first, 0.5f, &dim);
  ExpectClose(truncated.vector(), MeanRows(first_states, dim, 0, 8192));
  window.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  const auto late = EmbedOne(doc, window);
  EXPECT_EQ(late.token_count(), content.size());
  ASSERT_GT(late.chunks_size(), 0);
  EXPECT_EQ(late.chunks(0).token_span().start(), 0u);
  EXPECT_EQ(late.chunks(late.chunks_size() - 1).token_span().end(), content.size());
}

TEST_P(LongWindowModelsTest, PromptNamesAreTheCheckpointsPrefixes) {
  auto info = client_->GetModelInfo(GetParam().name);
  ASSERT_TRUE(info.ok());
  ASSERT_GT(info->prompt_names_size(), 0);
  const std::string name = info->prompt_names(0);
  const std::string prefix = core_->model().sentence_transformers().prompts.at(name);
  const std::string doc = testing::SeededWords(30, 3);
  EmbedOptions named;
  named.prompt_name = name;
  const auto by_hand = EmbedOne(prefix + doc, {});
  ExpectClose(EmbedOne(doc, named).vector(),
              std::vector<double>(by_hand.vector().begin(), by_hand.vector().end()));
}

INSTANTIATE_TEST_SUITE_P(
    Families, LongWindowModelsTest,
    ::testing::Values(Family{"xlmr", testing::XlmRobertaModelDir(), "xlm-roberta", "<s>", "</s>"},
                      Family{"nomic", testing::NomicBertModelDir(), "nomic_bert", "[CLS]", "[SEP]"},
                      Family{"gte", testing::GteModelDir(), "new", "[CLS]", "[SEP]"},
                      Family{"jina", testing::JinaBertModelDir(), "jina_bert", "[CLS]", "[SEP]"},
                      Family{"modernbert", testing::ModernBertModelDir(), "modernbert", "[CLS]",
                             "[SEP]"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace embedding
