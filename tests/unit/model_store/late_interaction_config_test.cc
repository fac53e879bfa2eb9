// A late-interaction (ColBERT) checkpoint is read as one, never as a single-vector embedder:
// each mark of the two layouts the Hub holds (PyLate's and Stanford ColBERT's) makes the model
// a late-interaction one, whose settings come from its files with the published defaults; a
// mark without the projection, or a setting the vocabulary or positions cannot meet, is
// refused naming the file and field. Values are checked against the served outputs by
// tests/e2e/late_interaction_test.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "absl/strings/str_cat.h"
#include "model_store/formats/safetensors_writer.h"
#include "model_store/model.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

void EditJson(const std::string& path, const std::function<void(Json&)>& edit) {
  Json json = std::filesystem::exists(path) ? Json::parse(testing::ReadFile(path)) : Json::object();
  edit(json);
  testing::WriteFile(path, json.dump());
}

int64_t HiddenSize(const std::string& dir) {
  return Json::parse(testing::ReadFile(dir + "/config.json"))["hidden_size"];
}

// PyLate's projection: a Dense module of its own package, 8 wide, without bias.
void AddPylateDense(const std::string& dir) {
  const int64_t hidden = HiddenSize(dir);
  std::filesystem::create_directories(dir + "/1_Dense");
  testing::WriteFile(dir + "/1_Dense/config.json",
                     Json{{"in_features", hidden},
                          {"out_features", 8},
                          {"bias", false},
                          {"activation_function", "torch.nn.modules.linear.Identity"}}
                         .dump());
  ASSERT_TRUE(WriteSafetensors(dir + "/1_Dense/model.safetensors",
                               {{"linear.weight",
                                 F32Tensor{{8, hidden}, std::vector<float>(8 * hidden, 0.01f)}}})
                  .ok());
  EditJson(dir + "/modules.json", [](Json& modules) {
    modules.push_back({{"idx", modules.size()},
                       {"name", "3"},
                       {"path", "1_Dense"},
                       {"type", "pylate.models.Dense.Dense"}});
  });
}

void ExpectRefused(const std::string& dir, absl::StatusCode code,
                   const std::vector<std::string>& words) {
  auto model = Model::Load(dir, ModelOptions());
  ASSERT_FALSE(model.ok()) << words[0];
  EXPECT_EQ(model.status().code(), code) << model.status();
  for (const std::string& word : words)
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(word));
}

TEST(LateInteractionConfig, TheModelWithoutAnyMarkIsNotOne) {
  auto model = Model::Load(testing::CopyModelDir(testing::TinyModelDir(), "plain"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->late_interaction(), nullptr);
}

// The markers here are tokens the tiny vocabulary has; the defaults ("[Q] ", "[D] ") it lacks.
TEST(LateInteractionConfig, APylateFolderIsReadWithItsSettings) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pylate");
  AddPylateDense(dir);
  EditJson(dir + "/config_sentence_transformers.json", [](Json& st) {
    st["query_prefix"] = "[UNK]";
    st["document_prefix"] = "[MASK]";
    st["query_length"] = 12;
    st["document_length"] = 40;
  });
  auto model = Model::Load(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  const LateInteraction* late = (*model)->late_interaction();
  ASSERT_NE(late, nullptr);
  const Tokenizer& tokenizer = (*model)->tokenizer();
  const int32_t cls = tokenizer.config().prefix_ids.at(0);
  EXPECT_THAT(late->prefix(InputRole::kQuery), ElementsAre(cls, tokenizer.TokenToId("[UNK]")));
  EXPECT_THAT((*model)->special_prefix(), ElementsAre(cls, tokenizer.TokenToId("[MASK]")));
  EXPECT_EQ((*model)->max_input_length(), 40);  // document_length, not max_seq_length
  EXPECT_EQ((*model)->max_content_tokens(), 37);
  EXPECT_EQ((*model)->encoder().multi_vector_dim(), 8);
  // PyLate's defaults where the files are silent: expansion on, not attended, punctuation.
  EXPECT_TRUE(late->config().do_query_expansion);
  EXPECT_FALSE(late->config().attend_to_expansion_tokens);
  EXPECT_TRUE(late->Skipped(tokenizer.TokenToId(".")));
  const RoleSequence query = late->Sequence(InputRole::kQuery, {tokenizer.TokenToId(".")});
  EXPECT_EQ(query.ids.size(), 12u);  // [CLS] [UNK] . [SEP] then [MASK] x 8
  EXPECT_EQ(query.attended, 4);
}

TEST(LateInteractionConfig, APylateMarkWithoutItsProjectionIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pylate_no_dense");
  EditJson(dir + "/config_sentence_transformers.json",
           [](Json& st) { st["query_prefix"] = st["document_prefix"] = "[UNK]"; });
  ExpectRefused(dir, absl::StatusCode::kInvalidArgument,
                {"PyLate", "config_sentence_transformers.json", "no Dense projection"});
}

TEST(LateInteractionConfig, EachMalformedPylateFieldIsNamed) {
  for (const auto& [field, value] :
       {std::pair{"query_prefix", Json(3)}, std::pair{"query_length", Json("32")},
        std::pair{"document_length", Json(0)}, std::pair{"do_query_expansion", Json("yes")},
        std::pair{"attend_to_expansion_tokens", Json(1)},
        std::pair{"skiplist_words", Json::array({1})}}) {
    const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), field);
    AddPylateDense(dir);
    const std::string name = field;  // a lambda may not capture a structured binding (C++17)
    const Json given = value;
    EditJson(dir + "/config_sentence_transformers.json", [&](Json& st) { st[name] = given; });
    ExpectRefused(dir, absl::StatusCode::kDataLoss,
                  {"config_sentence_transformers.json", absl::StrCat("'", field, "'")});
  }
}

TEST(LateInteractionConfig, AMarkerOutsideTheVocabularyIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pylate_marker");
  AddPylateDense(dir);  // the default "[Q] " is not in the tiny vocabulary
  ExpectRefused(dir, absl::StatusCode::kInvalidArgument,
                {"query_prefix", "[Q] ", "not a token of the vocabulary"});
}

TEST(LateInteractionConfig, AQueryLongerThanThePositionsIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pylate_long_query");
  AddPylateDense(dir);
  EditJson(dir + "/config_sentence_transformers.json", [](Json& st) {
    st["query_prefix"] = st["document_prefix"] = "[UNK]";
    st["query_length"] = 100000;
  });
  ExpectRefused(dir, absl::StatusCode::kInvalidArgument, {"query_length 100000", "positions"});
}

TEST(LateInteractionConfig, StanfordsMetadataWithoutItsProjectionIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "stanford_metadata");
  testing::WriteFile(dir + "/artifact.metadata", Json{{"query_maxlen", 32},
                                                      {"doc_maxlen", 180},
                                                      {"query_token_id", "[UNK]"},
                                                      {"doc_token_id", "[MASK]"}}
                                                     .dump());
  ExpectRefused(dir, absl::StatusCode::kDataLoss, {"Stanford ColBERT", "linear.weight"});
}

// colbertv2.0 without its metadata file: a BERT checkpoint with the projection beside it is
// still Stanford's layout, and its default markers must be in the vocabulary.
TEST(LateInteractionConfig, StanfordsProjectionAloneMarksTheLayout) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "stanford_linear");
  auto tensors = testing::ReadTensors(dir + "/model.safetensors");
  const int64_t hidden = HiddenSize(dir);
  tensors["linear.weight"] = F32Tensor{{8, hidden}, std::vector<float>(8 * hidden, 0.01f)};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  ExpectRefused(dir, absl::StatusCode::kInvalidArgument, {"Stanford ColBERT", "[unused0]"});
  testing::WriteFile(dir + "/artifact.metadata",
                     Json{{"query_token_id", "[UNK]"}, {"doc_token_id", "[MASK]"}}.dump());
  auto model = Model::Load(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_NE((*model)->late_interaction(), nullptr);
  EXPECT_EQ((*model)->max_input_length(), 180);  // ColBERT's doc_maxlen default
  EXPECT_EQ((*model)->encoder().multi_vector_dim(), 8);
}

}  // namespace
}  // namespace embedding::model_store
