// Which files of a Hub repository are fetched, and the digests blobs are checked against:
// the selection from listings shaped like real repositories (sentence-transformers, sharded,
// pickle-only, hostile paths), and the digests against values git and sha256sum print.
#include "model_store/hub/model_file_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "model_store/formats/content_digest.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A listing plus the text of its metadata files; records which files were read.
struct FakeRepo {
  std::set<std::string> listing;
  std::map<std::string, std::string> texts;
  std::vector<std::string> read;
  MetadataReader Reader() {
    return [this](const std::string& path) -> absl::StatusOr<std::string> {
      read.push_back(path);
      return texts.at(path);
    };
  }
};

TEST(ModelFileSelectionTest, SentenceTransformersRepositoryTakesOnlyWhatTheServerReads) {
  FakeRepo repo{{"config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                 "special_tokens_map.json", "modules.json", "2_Pool/config.json",
                 "1_Pooling/config.json", "config_sentence_transformers.json", "model.safetensors",
                 "pytorch_model.bin", "onnx/model.onnx", "README.md", ".gitattributes"}};
  repo.texts["modules.json"] =
      R"([{"idx":0,"path":"","type":"sentence_transformers.models.Transformer"},
          {"idx":1,"path":"2_Pool","type":"sentence_transformers.models.Pooling"}])";
  auto files = SelectModelFiles("org/st", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files,
              ElementsAre("config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
                          "special_tokens_map.json", "config_sentence_transformers.json",
                          "modules.json", "2_Pool/config.json", "model.safetensors"));
  EXPECT_THAT(repo.read, ElementsAre("modules.json"));
}

// distiluse-base-multilingual-cased-v2's layout: a Dense module after pooling, its weights a
// pickle only; EmbeddingGemma's: two, as safetensors beside pickles.
TEST(ModelFileSelectionTest, DenseModulesComeWithTheirConfigAndOneWeightsFile) {
  FakeRepo repo{{"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json",
                 "2_Dense/config.json", "2_Dense/pytorch_model.bin", "3_Dense/config.json",
                 "3_Dense/model.safetensors", "3_Dense/pytorch_model.bin", "4_Normalize/.keep",
                 "model.safetensors"}};
  repo.texts["modules.json"] =
      R"([{"idx":0,"path":"","type":"sentence_transformers.models.Transformer"},
          {"idx":1,"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
          {"idx":2,"path":"2_Dense","type":"sentence_transformers.models.Dense"},
          {"idx":3,"path":"3_Dense","type":"sentence_transformers.models.Dense"},
          {"idx":4,"path":"4_Normalize","type":"sentence_transformers.models.Normalize"}])";
  auto files = SelectModelFiles("org/dense", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("config.json", "tokenizer.json", "modules.json",
                                  "1_Pooling/config.json", "2_Dense/config.json",
                                  "2_Dense/pytorch_model.bin", "3_Dense/config.json",
                                  "3_Dense/model.safetensors", "model.safetensors"));
}

TEST(ModelFileSelectionTest, ACustomCodeRepositoryIsServedFromItsFilesNeverItsCode) {
  // GTE's and JinaBERT v2's layouts: config.json's auto_map names Python modelling code (in
  // the repository or another one) and ONNX exports sit beside the checkpoint. The config's
  // fields say all the server needs; no code is fetched, so none can ever run.
  FakeRepo repo{{"config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                 "special_tokens_map.json", "modules.json", "1_Pooling/config.json",
                 "config_sentence_transformers.json", "model.safetensors", "onnx/model.onnx",
                 "configuration.py", "modeling.py", "configuration_bert.py", "README.md"}};
  repo.texts["modules.json"] =
      R"([{"idx":0,"path":"","type":"sentence_transformers.models.Transformer"},
          {"idx":1,"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
  auto files = SelectModelFiles("Alibaba-NLP/gte-base-en-v1.5", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files,
              ElementsAre("config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
                          "special_tokens_map.json", "config_sentence_transformers.json",
                          "modules.json", "1_Pooling/config.json", "model.safetensors"));
}

// jinaai/jina-embeddings-v3's layout: its Transformer module is its own (custom_st.py, with the
// task as a keyword), its config's auto_map names another repository's code, ONNX exports sit
// beside it. The checkpoint, tokenizer and module configs come; no code, no ONNX.
TEST(ModelFileSelectionTest, JinaV3IsServedFromItsWeightsAndConfigsNeverItsCode) {
  FakeRepo repo{{".gitattributes", "1_Pooling/config.json", "README.md", "config.json",
                 "config_sentence_transformers.json", "custom_st.py", "model.safetensors",
                 "modules.json", "onnx/model.onnx", "onnx/model.onnx_data", "onnx/model_fp16.onnx",
                 "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"}};
  repo.texts["modules.json"] =
      R"([{"idx":0,"name":"transformer","path":"","type":"custom_st.Transformer",
           "kwargs":["task"]},
          {"idx":1,"name":"pooler","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
          {"idx":2,"name":"normalizer","path":"2_Normalize",
           "type":"sentence_transformers.models.Normalize"}])";
  auto files = SelectModelFiles("jinaai/jina-embeddings-v3", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("config.json", "tokenizer.json", "tokenizer_config.json",
                                  "special_tokens_map.json", "config_sentence_transformers.json",
                                  "modules.json", "1_Pooling/config.json", "model.safetensors"));
}

// Qwen/Qwen3-Embedding-0.6B's and -4B's layouts: tokenizer.json holds the BPE, so vocab.json and
// merges.txt stay behind, as do generation_config.json and LICENSE; the 4B's shards come from
// their index.
TEST(ModelFileSelectionTest, Qwen3EmbeddingTakesItsTokenizerJsonAndShards) {
  const std::vector<std::string> common = {".gitattributes",
                                           "1_Pooling/config.json",
                                           "LICENSE",
                                           "README.md",
                                           "config.json",
                                           "config_sentence_transformers.json",
                                           "generation_config.json",
                                           "merges.txt",
                                           "modules.json",
                                           "tokenizer.json",
                                           "tokenizer_config.json",
                                           "vocab.json"};
  const char* kModules =
      R"([{"idx":0,"path":"","type":"sentence_transformers.models.Transformer"},
          {"idx":1,"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
          {"idx":2,"path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])";
  FakeRepo small{{common.begin(), common.end()}};
  small.listing.insert("model.safetensors");
  small.texts["modules.json"] = kModules;
  auto files = SelectModelFiles("Qwen/Qwen3-Embedding-0.6B", small.listing, small.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, UnorderedElementsAre("config.json", "tokenizer.json", "tokenizer_config.json",
                                           "config_sentence_transformers.json", "modules.json",
                                           "1_Pooling/config.json", "model.safetensors"));
  FakeRepo large{{common.begin(), common.end()}};
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                            "model.safetensors.index.json"}) {
    large.listing.insert(shard);
  }
  large.texts["modules.json"] = kModules;
  large.texts["model.safetensors.index.json"] =
      R"({"metadata": {"total_size": 8}, "weight_map": {
          "embed_tokens.weight": "model-00001-of-00002.safetensors",
          "norm.weight": "model-00002-of-00002.safetensors"}})";
  files = SelectModelFiles("Qwen/Qwen3-Embedding-4B", large.listing, large.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ::testing::IsSupersetOf({"model.safetensors.index.json",
                                               "model-00001-of-00002.safetensors",
                                               "model-00002-of-00002.safetensors"}));
  EXPECT_THAT(*files, ::testing::Not(::testing::Contains("merges.txt")));
  EXPECT_THAT(*files, ::testing::Not(::testing::Contains("vocab.json")));
}

TEST(ModelFileSelectionTest, BgeM3HeadsComeAlongPreferringSafetensorsCopies) {
  // BAAI/bge-m3's layout: the heads as torch.save files beside the checkpoint.
  FakeRepo repo{{"config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin",
                 "sparse_linear.pt", "colbert_linear.pt", "colbert_linear.safetensors",
                 "onnx/model.onnx"}};
  auto files = SelectModelFiles("BAAI/bge-m3", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("config.json", "tokenizer.json", "sparse_linear.pt",
                                  "colbert_linear.safetensors", "model.safetensors"));
}

TEST(ModelFileSelectionTest, PytorchModelBinIsTakenWhenNoSafetensorsExists) {
  // An older fine-tune: only pytorch_model.bin, and sentence-transformers' config under the
  // name its RoBERTa base gave it.
  FakeRepo repo{{"config.json", "tokenizer.json", "pytorch_model.bin", "tf_model.h5",
                 "sentence_roberta_config.json", "README.md"}};
  auto files = SelectModelFiles("org/old", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("config.json", "tokenizer.json", "sentence_roberta_config.json",
                                  "pytorch_model.bin"));
}

// colbert-ir/colbertv2.0's files: its metadata comes along, so the load reads its query and
// document lengths and markers (late_interaction_config.h).
TEST(ModelFileSelectionTest, StanfordColbertsMetadataComesAlong) {
  FakeRepo repo{{"config.json", "tokenizer.json", "vocab.txt", "model.safetensors",
                 "pytorch_model.bin", "artifact.metadata", "README.md"}};
  auto files = SelectModelFiles("colbert-ir/colbertv2.0", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("config.json", "tokenizer.json", "vocab.txt",
                                  "artifact.metadata", "model.safetensors"));
}

TEST(ModelFileSelectionTest, ShardedPytorchModelBinComesWithItsShards) {
  FakeRepo repo{{"config.json", "vocab.txt", "pytorch_model.bin.index.json",
                 "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}};
  repo.texts["pytorch_model.bin.index.json"] = R"({"weight_map": {
      "a": "pytorch_model-00002-of-00002.bin", "b": "pytorch_model-00001-of-00002.bin"}})";
  auto files = SelectModelFiles("org/sharded", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files,
              ElementsAre("config.json", "vocab.txt", "pytorch_model.bin.index.json",
                          "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"));
}

TEST(ModelFileSelectionTest, ShardsComeFromTheIndexOnceEach) {
  FakeRepo repo{{"config.json", "vocab.txt", "model.safetensors.index.json",
                 "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                 "model-00003-of-00003.safetensors"}};
  repo.texts["model.safetensors.index.json"] = R"({"metadata": {"total_size": 8},
      "weight_map": {"a": "model-00002-of-00002.safetensors",
                     "b": "model-00001-of-00002.safetensors",
                     "c": "model-00002-of-00002.safetensors"}})";
  auto files = SelectModelFiles("org/sharded", repo.listing, repo.Reader());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files,
              ElementsAre("config.json", "vocab.txt", "model.safetensors.index.json",
                          "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"));
}

TEST(ModelFileSelectionTest, EachRefusalNamesTheRepositoryAndWhy) {
  struct Case {
    std::set<std::string> listing;
    std::map<std::string, std::string> texts;
    absl::StatusCode code;
    std::string message;
  };
  const std::string index = "model.safetensors.index.json";
  const std::vector<Case> cases = {
      {{"tokenizer.json", "model.safetensors"},
       {},
       absl::StatusCode::kNotFound,
       "org/x: no config.json in the repository"},
      {{"config.json", "model.safetensors", "tokenizer_config.json"},
       {},
       absl::StatusCode::kNotFound,
       "org/x: neither tokenizer.json nor vocab.txt"},
      {{"config.json", "tokenizer.json", "model.onnx", "tf_model.h5"},
       {},
       absl::StatusCode::kNotFound,
       "org/x: no weights in the repository (none of model.safetensors, "
       "model.safetensors.index.json, pytorch_model.bin, pytorch_model.bin.index.json)"},
      {{"config.json", "tokenizer.json", "pytorch_model.bin.index.json"},
       {{"pytorch_model.bin.index.json", R"({"weight_map": {"a": "pytorch_model-1.bin"}})"}},
       absl::StatusCode::kNotFound,
       "org/x: pytorch_model.bin.index.json names pytorch_model-1.bin, which is not in the "
       "repository"},
      {{"config.json", "tokenizer.json", index},
       {{index, R"({"weight_map": {"a": "gone.safetensors"}})"}},
       absl::StatusCode::kNotFound,
       "org/x: model.safetensors.index.json names gone.safetensors, which is not in the "
       "repository"},
      {{"config.json", "tokenizer.json", index},
       {{index, R"({"weight_map": {"a": "../../x"}})"}},
       absl::StatusCode::kInvalidArgument,
       "repository path \"../../x\" has an empty, . or .. part"},
      {{"config.json", "tokenizer.json", index},
       {{index, R"({"weight_map": {"a": "/etc/x"}})"}},
       absl::StatusCode::kInvalidArgument,
       "repository path \"/etc/x\" is absolute"},
      {{"config.json", "tokenizer.json", index},
       {{index, R"({"weight_map": {"a": 3}})"}},
       absl::StatusCode::kDataLoss,
       "weight_map[\"a\"] is not a file name"},
      {{"config.json", "tokenizer.json", index},
       {{index, "{not json"}},
       absl::StatusCode::kDataLoss,
       "org/x: model.safetensors.index.json is not valid JSON"},
      {{"config.json", "tokenizer.json", "model.safetensors", "modules.json"},
       {{"modules.json", R"([{"path": "a\\b", "type": "x.Pooling"}])"}},
       absl::StatusCode::kInvalidArgument,
       "contains a backslash or NUL"},
  };
  for (const Case& c : cases) {
    FakeRepo repo{c.listing, c.texts};
    auto files = SelectModelFiles("org/x", repo.listing, repo.Reader());
    ASSERT_FALSE(files.ok()) << c.message;
    EXPECT_EQ(files.status().code(), c.code) << files.status();
    EXPECT_THAT(std::string(files.status().message()), HasSubstr(c.message));
  }
}

TEST(ContentDigestTest, MatchesGitAndSha256sum) {
  const std::string dir = testing::MakeScratchDir("content_digest");
  testing::WriteFile(dir + "/empty", "");
  testing::WriteFile(dir + "/hello", "hello world\n");
  // `git hash-object` and `sha256sum` of the same bytes.
  EXPECT_EQ(*FileDigest(dir + "/empty", DigestKind::kGitBlobSha1),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(*FileDigest(dir + "/hello", DigestKind::kGitBlobSha1),
            "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
  EXPECT_EQ(*FileDigest(dir + "/hello", DigestKind::kSha256),
            "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
  EXPECT_EQ(Sha256Hex("hello world\n"),
            "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
  EXPECT_EQ(*DigestKindOfEtag(std::string(64, 'a')), DigestKind::kSha256);
  EXPECT_EQ(*DigestKindOfEtag(std::string(40, 'f')), DigestKind::kGitBlobSha1);
  EXPECT_EQ(DigestKindOfEtag("xyz").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DigestKindOfEtag(std::string(64, 'g')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FileDigest(dir + "/missing", DigestKind::kSha256).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace embedding::model_store
