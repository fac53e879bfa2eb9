// Prompted rerankers: Qwen3-Reranker's published prompt and a configured one, vLLM's
// classifier_from_token reading a causal LM's head rows, and config overrides; every malformed
// prompt, token list or override refused naming its field.
#include "model_store/spec/score_prompt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_store/demo/demo_model_writer.h"
#include "model_store/model.h"
#include "model_store/spec/encoder_config.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

const Json kQwen3Overrides = {{"architectures", {"Qwen3ForSequenceClassification"}},
                              {"classifier_from_token", {"no", "yes"}},
                              {"is_original_qwen3_reranker", true}};

TEST(ScorePrompt, Qwen3RerankersPromptTakesTheInstructionOrItsDefault) {
  const ScorePrompt prompt = Qwen3RerankerPrompt();
  ASSERT_TRUE(prompt.takes_instruction());
  const std::string given = prompt.FormatQuery("owls {instruction}", "Find birds");
  EXPECT_THAT(given, StartsWith("<|im_start|>system\nJudge whether the Document meets"));
  // Braces in the query are its text: one pass, never a second substitution.
  EXPECT_THAT(given, EndsWith("<|im_end|>\n<|im_start|>user\n<Instruct>: Find birds\n"
                              "<Query>: owls {instruction}\n<Document>:"));
  EXPECT_THAT(prompt.FormatQuery("owls", ""),
              HasSubstr("<Instruct>: Given a web search query, retrieve relevant passages that "
                        "answer the query\n<Query>: owls\n"));
  EXPECT_EQ(prompt.document_lead, " ");
  EXPECT_EQ(prompt.suffix, "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ScorePrompt, AConfiguredPromptSplitsItsDocumentTemplate) {
  const Json config = {{"score_prompt",
                        {{"query_template", "Q: {query} I: {instruction}"},
                         {"document_template", "[{document}] END"},
                         {"default_instruction", "rank"}}}};
  auto prompt = ReadScorePrompt("config.json", config);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->document_lead, "[");
  EXPECT_EQ(prompt->suffix, "] END");
  EXPECT_EQ(prompt->FormatQuery("owls", ""), "Q: owls I: rank");
  auto none = ReadScorePrompt("config.json", Json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(ScorePrompt, MalformedPromptsAreRefusedNamingTheField) {
  for (const auto& [config, message] : std::vector<std::pair<Json, std::string>>{
           {{{"is_original_qwen3_reranker", true}, {"score_prompt", Json::object()}}, "give one"},
           {{{"score_prompt", "text"}}, "field 'score_prompt' must be an object"},
           {{{"score_prompt",
              {{"query_template", "no query"}, {"document_template", "{document}"}}}},
            "field 'query_template' must hold {query} once"},
           {{{"score_prompt",
              {{"query_template", "{query}"}, {"document_template", "{document}{document}"}}}},
            "field 'document_template' must hold {document} once"},
           {{{"is_original_qwen3_reranker", "yes"}}, "is_original_qwen3_reranker"}}) {
    auto prompt = ReadScorePrompt("config.json", config);
    EXPECT_EQ(prompt.status().code(), absl::StatusCode::kDataLoss) << config.dump();
    EXPECT_THAT(std::string(prompt.status().message()),
                AllOf(StartsWith("config.json"), HasSubstr(message)));
  }
}

// A small Qwen3ForCausalLM in Qwen3-Reranker's layout, written once.
std::string RerankerDir() {
  static const std::string dir = [] {
    const std::string out = testing::MakeScratchDir("qwen3_causal_lm_reranker");
    DemoModelSpec spec;
    spec.architecture = "qwen3";
    spec.hidden_size = 32;
    spec.num_heads = 2;
    spec.num_layers = 1;
    spec.max_positions = 128;
    spec.vocab_size = 9000;
    spec.causal_lm_reranker = true;
    EXPECT_TRUE(WriteDemoModel(out, spec).ok());
    return out;
  }();
  return dir;
}

absl::StatusOr<std::unique_ptr<Model>> LoadWith(const Json& overrides) {
  ModelOptions options;
  options.config_overrides = overrides.dump();
  return Model::Load(RerankerDir(), options);
}

TEST(ScorePrompt, ACausalLmWithOverridesIsAPromptedReranker) {
  auto plain = Model::Load(RerankerDir(), {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*plain)->kind(), ModelKind::kEmbedding);
  auto model = LoadWith(kQwen3Overrides);
  ASSERT_TRUE(model.ok()) << model.status();
  const ClassifierConfig& head = (*model)->config().classifier;
  EXPECT_EQ((*model)->kind(), ModelKind::kReranker);
  EXPECT_THAT(head.labels, ElementsAre("yes"));
  EXPECT_EQ(head.score, ScoreFunction::kSigmoid);
  const Tokenizer& tokenizer = (*model)->tokenizer();
  EXPECT_EQ(head.from_token_ids,
            (std::vector<int32_t>{tokenizer.TokenToId("no"), tokenizer.TokenToId("yes")}));
  // The prompt's suffix ends every pair; the Qwen tokenizer's own template adds nothing.
  auto suffix = tokenizer.Tokenize(Qwen3RerankerPrompt().suffix);
  ASSERT_TRUE(suffix.ok());
  const PairEncoding pair = tokenizer.EncodePair({1, 2}, {3});
  std::vector<int32_t> want = {1, 2, 3};
  want.insert(want.end(), suffix->ids.begin(), suffix->ids.end());
  EXPECT_EQ(pair.ids, want);
  EXPECT_EQ(pair.second_begin, 2);
  EXPECT_EQ(tokenizer.num_pair_special_tokens(), static_cast<int>(suffix->ids.size()));
  // Three tokens: a label each, softmax over them.
  Json three = kQwen3Overrides;
  three["classifier_from_token"] = {"no", "yes", "<|im_end|>"};
  auto classifier = LoadWith(three);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  EXPECT_EQ((*classifier)->kind(), ModelKind::kClassifier);
  EXPECT_THAT((*classifier)->config().classifier.labels, ElementsAre("no", "yes", "<|im_end|>"));
  EXPECT_EQ((*classifier)->config().classifier.score, ScoreFunction::kSoftmax);
}

TEST(ScorePrompt, BadTokensAndOverridesAreRefusedNamingTheField) {
  Json unknown = kQwen3Overrides;
  unknown["classifier_from_token"] = {"no", "maybe-not-a-token"};
  auto model = LoadWith(unknown);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("classifier_from_token 'maybe-not-a-token' is not a token"));
  Json one = kQwen3Overrides;
  one["classifier_from_token"] = {"yes"};
  model = LoadWith(one);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string(model.status().message()),
      AllOf(HasSubstr("with --hf_overrides"), HasSubstr("'classifier_from_token' must list 2")));
  Json untied = kQwen3Overrides;
  untied["tie_word_embeddings"] = false;  // and no lm_head.weight in the file
  model = LoadWith(untied);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("no tensor 'lm_head.weight'"));
  Json causal = kQwen3Overrides;
  causal["architectures"] = {"Qwen3ForCausalLM"};
  model = LoadWith(causal);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("but architectures is 'Qwen3ForCausalLM'"));
  auto bert = ParseEncoderConfig(
      "config.json", testing::ReadFile(RerankerDir() + "/config.json"),
      R"({"model_type": "bert", "architectures": ["BertForSequenceClassification"],
          "classifier_from_token": ["no", "yes"], "type_vocab_size": 2,
          "max_position_embeddings": 64, "layer_norm_eps": 1e-12})");
  EXPECT_EQ(bert.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bert.status().message()),
              HasSubstr("classifier_from_token: the bert family has no language-model head"));
  auto not_object = ParseEncoderConfig("config.json", "{}", "[1]");
  EXPECT_EQ(not_object.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(not_object.status().message()), StartsWith("--hf_overrides"));
}

}  // namespace
}  // namespace embedding::model_store
