// Cross-encoders and classifiers: *ForSequenceClassification checkpoints load as rerankers or
// classifiers with their head as data, pairs follow each post-processor's template with its
// token types, and every malformed head, label list or pair is refused naming what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "model_store/demo/demo_model_writer.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/safetensors_writer.h"
#include "model_store/model.h"
#include "model_store/text/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// A small demo checkpoint of `family` with `labels` labels (0: an embedder), written once.
std::string DemoDir(const std::string& family, int labels) {
  const std::string dir =
      testing::MakeScratchDir("classifier_" + family + "_" + std::to_string(labels));
  DemoModelSpec spec;
  spec.architecture = family;
  spec.hidden_size = 32;
  spec.num_heads = 2;
  spec.num_layers = 1;
  spec.max_positions = 64;
  spec.vocab_size = 9000;
  spec.num_labels = labels;
  EXPECT_TRUE(WriteDemoModel(dir, spec).ok());
  return dir;
}

// `dir`'s config.json edited, loaded, and put back.
absl::Status LoadEdited(const std::string& dir, const std::function<void(Json&)>& edit) {
  const std::string original = testing::ReadFile(dir + "/config.json");
  Json json = Json::parse(original);
  edit(json);
  testing::WriteFile(dir + "/config.json", json.dump());
  absl::Status status = Model::Load(dir, {}).status();
  testing::WriteFile(dir + "/config.json", original);
  return status;
}

std::vector<float> Logits(const Model& model, const PairEncoding& pair) {
  EncodeBatch batch;
  batch.sequences = {pair.ids};
  batch.token_types = {pair.type_ids};
  batch.temperatures = {1.0f};
  batch.pooling = model.pooling();
  batch.normalize = false;
  auto result = model.encoder().Encode(batch);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->pooled[0] : std::vector<float>();
}

TEST(ClassifierHead, RerankersAndClassifiersLoadWithTheirKindLabelsAndHead) {
  auto reranker = Model::Load(DemoDir("bert", 1), {});
  ASSERT_TRUE(reranker.ok()) << reranker.status();
  EXPECT_EQ((*reranker)->kind(), ModelKind::kReranker);
  EXPECT_THAT((*reranker)->config().classifier.labels, ElementsAre("LABEL_0"));
  EXPECT_EQ((*reranker)->config().classifier.score, ScoreFunction::kSigmoid);
  EXPECT_EQ((*reranker)->encoder().embedding_dim(), 1);
  EXPECT_EQ((*reranker)->pooling(), PoolingMode::kCls);
  EXPECT_TRUE((*reranker)->unread_tensors().empty());  // the pooler and classifier are read
  auto classifier = Model::Load(DemoDir("modernbert", 3), {});
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  EXPECT_EQ((*classifier)->kind(), ModelKind::kClassifier);
  EXPECT_EQ((*classifier)->config().classifier.score, ScoreFunction::kSoftmax);
  EXPECT_EQ((*classifier)->pooling(), PoolingMode::kMean);  // classifier_pooling "mean"
  EXPECT_EQ((*classifier)->encoder().embedding_dim(), 3);
  auto decoder = Model::Load(DemoDir("qwen3", 1), {});  // Qwen3ForSequenceClassification
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_EQ((*decoder)->kind(), ModelKind::kReranker);
  EXPECT_EQ((*decoder)->pooling(), PoolingMode::kLastToken);
  EXPECT_TRUE((*decoder)->unread_tensors().empty());  // `score` read, without a bias
  auto embedder = Model::Load(DemoDir("bert", 0), {});
  ASSERT_TRUE(embedder.ok()) << embedder.status();
  EXPECT_EQ((*embedder)->kind(), ModelKind::kEmbedding);
}

TEST(ClassifierHead, TheSecondSegmentsTokenTypeReachesTheModel) {
  auto model = Model::Load(DemoDir("bert", 1), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const Tokenizer& tokenizer = (*model)->tokenizer();
  const std::vector<int32_t> query = tokenizer.Tokenize("owls")->ids;
  const std::vector<int32_t> document = tokenizer.Tokenize("hunt at night")->ids;
  PairEncoding pair = tokenizer.EncodePair(query, document);
  // [CLS] query [SEP] typed 0, document [SEP] typed 1.
  std::vector<int32_t> types(query.size() + 2, 0);
  types.resize(query.size() + document.size() + 3, 1);
  ASSERT_EQ(pair.ids.size(), types.size());
  EXPECT_EQ(pair.type_ids, types);
  PairEncoding untyped = pair;
  untyped.type_ids.assign(pair.ids.size(), 0);
  EXPECT_NE(Logits(**model, pair), Logits(**model, untyped));
  // Types the table has no row for, or of the wrong length, are refused naming them.
  EncodeBatch batch;
  batch.sequences = {pair.ids};
  batch.temperatures = {1.0f};
  batch.token_types = {std::vector<int32_t>(pair.ids.size(), 2)};
  EXPECT_THAT((*model)->encoder().Encode(batch).status().message(),
              AllOf(HasSubstr("token_types[0]"), HasSubstr("type 2 outside [0, 2)")));
  batch.token_types = {{0, 1}};
  EXPECT_THAT((*model)->encoder().Encode(batch).status().message(),
              HasSubstr("token_types[0]: 2 types for " + std::to_string(pair.ids.size()) +
                        " tokens"));
}

TEST(ClassifierHead, PairTemplatesFollowEachPostProcessor) {
  const Json vocab = {{"[UNK]", 0}, {"[CLS]", 1}, {"[SEP]", 2}, {"a", 3}, {"b", 4},
                      {"<s>", 5},   {"</s>", 6}};
  auto with_post = [&](const Json& post) {
    Json json = {{"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", vocab}}},
                 {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                 {"post_processor", post}};
    return Tokenizer::FromJson("tokenizer.json", json.dump());
  };
  auto bert = with_post({{"type", "BertProcessing"}, {"cls", {"[CLS]", 1}}, {"sep", {"[SEP]", 2}}});
  ASSERT_TRUE(bert.ok()) << bert.status();
  PairEncoding pair = (*bert)->EncodePair({3}, {4, 4});
  EXPECT_THAT(pair.ids, ElementsAre(1, 3, 2, 4, 4, 2));
  EXPECT_THAT(pair.type_ids, ElementsAre(0, 0, 0, 1, 1, 1));
  EXPECT_EQ(pair.second_begin, 3);  // what precedes the document: its query's, shared
  auto roberta = with_post({{"type", "RobertaProcessing"}, {"cls", {"<s>", 5}}, {"sep", {"</s>", 6}}});
  ASSERT_TRUE(roberta.ok()) << roberta.status();
  pair = (*roberta)->EncodePair({3}, {4});
  EXPECT_THAT(pair.ids, ElementsAre(5, 3, 6, 6, 4, 6));
  EXPECT_THAT(pair.type_ids, ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_EQ(pair.second_begin, 4);
  EXPECT_EQ((*roberta)->num_pair_special_tokens(), 4);
  // No post-processor (or ByteLevel's alone, as Qwen3's): back to back, the second typed 1.
  auto bare = with_post(Json());
  ASSERT_TRUE(bare.ok()) << bare.status();
  pair = (*bare)->EncodePair({3}, {4, 4});
  EXPECT_THAT(pair.ids, ElementsAre(3, 4, 4));
  EXPECT_THAT(pair.type_ids, ElementsAre(0, 1, 1));
  EXPECT_EQ(pair.second_begin, 1);
  auto special = [](const char* id, int type) {
    return Json{{"SpecialToken", {{"id", id}, {"type_id", type}}}};
  };
  auto sequence = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  const Json single = {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)};
  auto no_pair = with_post({{"type", "TemplateProcessing"}, {"single", single}});
  ASSERT_TRUE(no_pair.ok());
  EXPECT_FALSE((*no_pair)->has_pair_template());
  auto bad = with_post({{"type", "TemplateProcessing"}, {"single", single},
                        {"pair", {special("[CLS]", 0), sequence("C", 0)}}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr("post_processor.pair"), HasSubstr("'C'")));
  bad = with_post({{"type", "TemplateProcessing"}, {"single", single},
                   {"pair", {special("[CLS]", -1)}}});
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr("post_processor.pair"), HasSubstr("type_id")));
}

TEST(ClassifierHead, MalformedLabelsAndHeadsAreRefusedNamingTheField) {
  const std::string dir = DemoDir("bert", 2);
  auto expect = [&](const std::function<void(Json&)>& edit, absl::StatusCode code,
                    const std::vector<std::string>& words) {
    const absl::Status status = LoadEdited(dir, edit);
    EXPECT_EQ(status.code(), code) << status;
    for (const auto& word : words) EXPECT_THAT(status.message(), HasSubstr(word));
  };
  expect([](Json& j) { j["id2label"] = {{"0", "A"}, {"5", "B"}}; }, absl::StatusCode::kDataLoss,
         {"id2label", "'5'"});
  expect([](Json& j) { j["id2label"] = {{"0", "A"}, {"1", 7}}; }, absl::StatusCode::kDataLoss,
         {"id2label"});
  expect([](Json& j) { j["problem_type"] = "ranking"; }, absl::StatusCode::kDataLoss,
         {"problem_type", "multi_label_classification"});
  expect([](Json& j) {
           j.erase("id2label");
           j["num_labels"] = 0;
         },
         absl::StatusCode::kDataLoss, {"num_labels"});
  // The head's shape follows the labels: three labels against a two-row classifier.
  expect([](Json& j) { j["id2label"] = {{"0", "A"}, {"1", "B"}, {"2", "C"}}; },
         absl::StatusCode::kDataLoss, {"classifier.weight", "3 label(s)"});
  expect([](Json& j) { j["architectures"] = {"NomicBertForSequenceClassification"}; },
         absl::StatusCode::kOk, {});  // the family is config.json's model_type: bert has a head
  const std::string nomic = testing::CopyModelDir(testing::NomicBertModelDir(), "nomic_cls");
  const absl::Status refused = LoadEdited(
      nomic, [](Json& j) { j["architectures"] = {"NomicBertForSequenceClassification"}; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("architectures"), HasSubstr("nomic_bert"),
                                       HasSubstr("bert, xlm-roberta")));
}

TEST(ClassifierHead, AMissingHeadTensorOrPairTemplateIsNamed) {
  const std::string dir = testing::CopyModelDir(DemoDir("xlm-roberta", 1), "xlmr_no_head");
  auto tensors = testing::ReadTensors(dir + "/model.safetensors");
  tensors.erase("classifier.out_proj.weight");
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(model.status().message(), HasSubstr("classifier.out_proj.weight"));
  const std::string plain = testing::CopyModelDir(DemoDir("bert", 1), "bert_no_pair");
  Json tokenizer = Json::parse(testing::ReadFile(plain + "/tokenizer.json"));
  tokenizer["post_processor"].erase("pair");
  testing::WriteFile(plain + "/tokenizer.json", tokenizer.dump());
  model = Model::Load(plain, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("post_processor.pair"));
}

}  // namespace
}  // namespace embedding::model_store
