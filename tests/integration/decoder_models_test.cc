// A decoder (Qwen3's shape: grouped-query heads, q/k norms, byte-level BPE appending
// <|endoftext|>, last-token pooling) served end to end: model info, the appended token, the query
// prompt, chunk-and-merge with each chunk's own end token and late chunking's left-context
// spans, each checked by value against the model core run in this process.
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

// Served vectors against the core's, to float rounding.
void ExpectClose(const google::protobuf::RepeatedField<float>& got,
                 const std::vector<double>& want) {
  testing::ExpectClose(got, want, 2e-5);
}

class DecoderModelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess({"--model=qwen3=" + testing::Qwen3ModelDir()});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
  }

  void SetUp() override {
    core_ = std::make_unique<testing::ModelCore>(testing::Qwen3ModelDir());
    ASSERT_TRUE(core_->ok());
  }

  std::vector<int32_t> Content(const std::string& text) const { return core_->Content(text); }

  // The normalised last row: what last-token pooling gives.
  std::vector<double> LastToken(const std::vector<int32_t>& content, float tau) const {
    int64_t dim = 0;
    const auto ids = core_->WithSpecialTokens(content);
    const auto states = core_->States(ids, tau, &dim);
    return MeanRows(states, dim, ids.size() - 1, ids.size());
  }

  v1::DocumentEmbedding EmbedOne(const std::string& text, EmbedOptions options) const {
    return testing::EmbedOne(*client_, "qwen3", text, options);
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
  std::unique_ptr<testing::ModelCore> core_;
};
testing::ServerProcess* DecoderModelsTest::server_ = nullptr;
client::EmbeddingClient* DecoderModelsTest::client_ = nullptr;

TEST_F(DecoderModelsTest, ModelInfoAndTokenizeShowTheAppendedEndToken) {
  auto info = client_->GetModelInfo("qwen3");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->architecture(), "qwen3");
  EXPECT_EQ(info->pooling(), "last_token");
  EXPECT_EQ(info->pooled_token(), "<|endoftext|>");
  EXPECT_TRUE(info->causal());
  EXPECT_EQ(info->max_window_tokens(), 8191u);  // one special token: the appended end
  v1::TokenizeRequest request;
  request.set_model("qwen3");
  request.add_inputs("Straße, Привет, 中文 👍🏽 end");
  auto response = client_->Tokenize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const auto& tokens = response->inputs(0).tokens();
  const auto content = Content("Straße, Привет, 中文 👍🏽 end");
  ASSERT_EQ(static_cast<size_t>(tokens.size()), content.size() + 1);
  EXPECT_EQ(tokens[tokens.size() - 1].text(), "<|endoftext|>");
  for (size_t i = 0; i < content.size(); ++i) EXPECT_EQ(tokens[i].id(), content[i]);
}

// The query prompt is Qwen3's instruction; the vector is the end token's state of prompt + text.
TEST_F(DecoderModelsTest, QueriesTakeTheInstructionAndPoolTheEndToken) {
  const std::string doc = testing::SeededWords(40, 3);
  const std::string instruction = core_->model().sentence_transformers().prompts.at("query");
  ASSERT_THAT(instruction, ::testing::StartsWith("Instruct: "));
  EmbedOptions query;
  query.prompt_name = "query";
  query.temperature = 0.7f;
  ExpectClose(EmbedOne(doc, query).vector(), LastToken(Content(instruction + doc), 0.7f));
  EmbedOptions free_text;
  free_text.prompt = "Instruct: Find the passage about rivers\nQuery:";
  free_text.temperature = 0.7f;
  ExpectClose(EmbedOne(doc, free_text).vector(), LastToken(Content(free_text.prompt + doc), 0.7f));
  EmbedOptions document;
  document.prompt_name = "document";  // empty: documents get no instruction
  document.temperature = 0.7f;
  ExpectClose(EmbedOne(doc, document).vector(), LastToken(Content(doc), 0.7f));
}

// Past the window each chunk is its own sequence with its own end token; late chunking pools
// spans of one causal forward, where each token has seen its left context only.
TEST_F(DecoderModelsTest, ChunksEndWithTheirOwnTokenAndLateChunkingSeesTheLeftContext) {
  const std::string doc = testing::SeededWords(1200, 4);
  const auto content = Content(doc);
  ASSERT_GT(content.size(), 1024u);
  EmbedOptions options;
  options.temperature = 0.5f;
  options.chunk_tokens = 512;
  options.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_ALL;
  const auto all = EmbedOne(doc, options);
  ASSERT_EQ(all.chunks_size(), static_cast<int>((content.size() + 511) / 512));
  for (const auto& chunk : all.chunks()) {
    const std::vector<int32_t> piece(content.begin() + chunk.token_span().start(),
                                     content.begin() + chunk.token_span().end());
    ExpectClose(chunk.vector(), LastToken(piece, 0.5f));
  }
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  const auto late = EmbedOne(doc, options);
  int64_t dim = 0;
  const auto states = core_->States(core_->WithSpecialTokens(content), 0.5f, &dim);
  ASSERT_GT(late.chunks_size(), 1);
  for (const auto& chunk : late.chunks()) {
    ExpectClose(chunk.vector(),
                MeanRows(states, dim, chunk.token_span().start(), chunk.token_span().end()));
  }
}

}  // namespace
}  // namespace embedding
