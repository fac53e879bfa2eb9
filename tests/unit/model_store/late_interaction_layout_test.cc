// A late-interaction (ColBERT) checkpoint is refused by name, never loaded as a single-vector
// embedder: each mark of the two layouts the Hub holds (PyLate's and Stanford ColBERT's),
// added alone to an ordinary sentence-transformers model, makes the load fail naming the file
// and the mark; the model without it still loads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "model_store/formats/safetensors_writer.h"
#include "model_store/model.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Json = nlohmann::json;

void EditJson(const std::string& path, const std::function<void(Json&)>& edit) {
  Json json = Json::parse(testing::ReadFile(path));
  edit(json);
  testing::WriteFile(path, json.dump());
}

void ExpectRefused(const std::string& dir, const std::string& file, const std::string& mark) {
  auto model = Model::Load(dir, ModelOptions());
  ASSERT_FALSE(model.ok()) << mark;
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << model.status();
  EXPECT_THAT(std::string(model.status().message()),
              AllOf(HasSubstr(file), HasSubstr(mark), HasSubstr("late-interaction (ColBERT)")));
}

TEST(LateInteractionLayout, TheModelWithoutAnyMarkLoads) {
  auto model = Model::Load(testing::CopyModelDir(testing::TinyModelDir(), "plain"), {});
  EXPECT_TRUE(model.ok()) << model.status();
}

// PyLate saves its projection as a module of its own package; by its last name alone it
// would pass for sentence-transformers' Dense.
TEST(LateInteractionLayout, APylateModuleIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pylate_module");
  EditJson(dir + "/modules.json", [](Json& modules) {
    modules.push_back({{"idx", modules.size()},
                       {"name", "1"},
                       {"path", "1_Dense"},
                       {"type", "pylate.models.Dense"}});
  });
  ExpectRefused(dir, "modules.json", "pylate.models.Dense");
}

TEST(LateInteractionLayout, EachOfPylatesConfigFieldsIsRefused) {
  for (const char* field : {"query_prefix", "document_prefix", "query_length", "document_length",
                            "do_query_expansion", "attend_to_expansion_tokens",
                            "skiplist_words"}) {
    const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), field);
    EditJson(dir + "/config_sentence_transformers.json",
             [&](Json& st) { st[field] = field == std::string("skiplist_words")
                                             ? Json::array({"!", "?"})
                                             : Json("[Q] "); });
    ExpectRefused(dir, "config_sentence_transformers.json", field);
  }
}

TEST(LateInteractionLayout, StanfordsMetadataFileIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "stanford_metadata");
  testing::WriteFile(dir + "/artifact.metadata",
                     Json{{"query_maxlen", 32}, {"doc_maxlen", 180}}.dump());
  ExpectRefused(dir, "artifact.metadata", "Stanford ColBERT");
}

// colbertv2.0 without its metadata file: a BERT checkpoint with the projection beside it.
TEST(LateInteractionLayout, StanfordsProjectionTensorIsRefused) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "stanford_linear");
  auto tensors = testing::ReadTensors(dir + "/model.safetensors");
  const int64_t hidden = Json::parse(testing::ReadFile(dir + "/config.json"))["hidden_size"];
  tensors["linear.weight"] = F32Tensor{{8, hidden}, std::vector<float>(8 * hidden, 0.01f)};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  ExpectRefused(dir, "model.safetensors", "linear.weight");
}

}  // namespace
}  // namespace embedding::model_store
