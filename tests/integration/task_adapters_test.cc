// jina-embeddings-v3's task adapters served end to end: ModelInfo lists the tasks and widths;
// `task` selects one and prepends its instruction, a prompt_name of a task's name does the same, no
// task runs the base weights; each vector checked against the model core run in this process
// with that adapter. Unknown tasks, and a task for a model without adapters, are refused naming
// `task`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/embedding_client.h"
#include "model_store/model.h"
#include "tests/testing/model_core.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"
#include "tests/testing/vector_checks.h"

namespace embedding {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TaskAdaptersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess(
        {"--model=jina=" + testing::JinaV3ModelDir(), "--model=tiny=" + testing::TinyModelDir()});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
  }

  void SetUp() override {
    core_ = std::make_unique<testing::ModelCore>(testing::JinaV3ModelDir());
    ASSERT_TRUE(core_->ok());
  }

  // The normalised mean of `text`'s final states with `adapter` (-1: none), as the core gives.
  std::vector<double> Expected(const std::string& text, int32_t adapter) const {
    model_store::EncodeBatch batch;
    batch.sequences = {core_->WithSpecialTokens(core_->Content(text))};
    batch.temperatures = {1.0f};
    batch.adapters = {adapter};
    batch.pooling = model_store::PoolingMode::kMean;
    auto result = core_->model().encoder().Encode(batch);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return {};
    return std::vector<double>(result->pooled[0].begin(), result->pooled[0].end());
  }

  v1::DocumentEmbedding EmbedOne(const std::string& text, client::EmbedOptions options) const {
    return testing::EmbedOne(*client_, "jina", text, options);
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
  std::unique_ptr<testing::ModelCore> core_;
};
testing::ServerProcess* TaskAdaptersTest::server_ = nullptr;
client::EmbeddingClient* TaskAdaptersTest::client_ = nullptr;

TEST_F(TaskAdaptersTest, EachTaskRunsItsAdapterWithItsInstruction) {
  auto info = client_->GetModelInfo("jina");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->architecture(), "xlm-roberta-flash");
  EXPECT_THAT(std::vector<std::string>(info->tasks().begin(), info->tasks().end()),
              ElementsAre("retrieval.query", "retrieval.passage", "separation", "classification",
                          "text-matching"));
  // The demo's width allows two of jina-v3's Matryoshka widths: 32 and its own 64.
  EXPECT_THAT(std::vector<uint32_t>(info->matryoshka_dimensions().begin(),
                                    info->matryoshka_dimensions().end()),
              ElementsAre(32u, 64u));
  const std::string doc = testing::SeededWords(60, 8);
  const auto& prompts = core_->model().sentence_transformers().prompts;
  client::EmbedOptions query;
  query.task = "retrieval.query";
  testing::ExpectClose(EmbedOne(doc, query).vector(),
                       Expected(prompts.at("retrieval.query") + doc, 0), 2e-5);
  client::EmbedOptions passage;
  passage.prompt_name = "retrieval.passage";  // a task's name: its adapter too
  testing::ExpectClose(EmbedOne(doc, passage).vector(),
                       Expected(prompts.at("retrieval.passage") + doc, 1), 2e-5);
  client::EmbedOptions matching;
  matching.task = "text-matching";  // no instruction
  testing::ExpectClose(EmbedOne(doc, matching).vector(), Expected(doc, 4), 2e-5);
  client::EmbedOptions free_text;
  free_text.task = "classification";
  free_text.prompt = "topic: ";  // the request's own prompt wins over the task's
  testing::ExpectClose(EmbedOne(doc, free_text).vector(), Expected("topic: " + doc, 3), 2e-5);
  testing::ExpectClose(EmbedOne(doc, {}).vector(), Expected(doc, -1), 2e-5);
}

TEST_F(TaskAdaptersTest, UnknownTasksAreRefusedNamingTheField) {
  v1::EmbedRequest request;
  request.set_model("jina");
  request.add_inputs("owls");
  request.set_task("summarize");
  auto response = client_->Embed(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("task: 'summarize'"));
  EXPECT_THAT(response.status().message(), HasSubstr("[retrieval.query, retrieval.passage,"));
  request.set_model("tiny");
  request.set_task("retrieval.query");
  response = client_->Embed(request);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("task: 'retrieval.query' is not served"));
}

}  // namespace
}  // namespace embedding
