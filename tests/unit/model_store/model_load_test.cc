// Loading model directories: sharded checkpoints, weight prefixes, and every way a directory
// can be wrong, each with an error naming the file and the tensor or field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <tuple>

#include "absl/strings/str_split.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/model.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/encoder_config.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kWordEmbeddings[] = "embeddings.word_embeddings.weight";
constexpr char kQuery1[] = "encoder.layer.1.attention.self.query.weight";

std::vector<float> EmbedOne(const Model& model, const std::string& text) {
  auto tokens = model.tokenizer().Tokenize(text);
  EXPECT_TRUE(tokens.ok());
  EncodeBatch batch;
  batch.sequences = {model.tokenizer().AddSpecialTokens(tokens->ids)};
  batch.temperatures = {1.0f};
  batch.pooling = model.pooling();
  auto result = model.encoder().Encode(batch);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->pooled[0] : std::vector<float>();
}

void EditJson(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  auto json = nlohmann::json::parse(testing::ReadFile(path));
  edit(json);
  testing::WriteFile(path, json.dump());
}

// `dir` with its config.json edited is refused with DATA_LOSS naming every one of `words`;
// the file is put back afterwards.
void ExpectConfigRefused(const std::string& dir, const std::function<void(nlohmann::json&)>& edit,
                         const std::vector<std::string>& words) {
  const std::string original = testing::ReadFile(dir + "/config.json");
  EditJson(dir + "/config.json", edit);
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss) << model.status();
  for (const auto& word : words) EXPECT_THAT(model.status().message(), HasSubstr(word));
  testing::WriteFile(dir + "/config.json", original);
}

TEST(ModelLoad, LoadsTheDemoModel) {
  auto model = Model::Load(testing::TinyModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->config().model_type, "bert");
  EXPECT_EQ((*model)->pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->is_demo());
  EXPECT_EQ((*model)->special_prefix().size() + (*model)->special_suffix().size(), 2u);
  EXPECT_EQ((*model)->sentence_transformers().prompts.at("query"), "query: ");
  EXPECT_EQ((*model)->max_content_tokens(), (*model)->config().max_position_embeddings - 2);
  EXPECT_GE((*model)->tokenizer().vocab_size(), 8000u);
}

TEST(ModelLoad, PoolingOverrideWins) {
  ModelOptions options;
  options.pooling_override = PoolingMode::kCls;
  auto model = Model::Load(testing::TinyModelDir(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->pooling(), PoolingMode::kCls);
}

// A copy of `from` whose tensors are all saved under `prefix`.
std::string CopyWithPrefix(const std::string& from, const std::string& prefix) {
  const std::string dir = testing::CopyModelDir(from, "prefixed_" + prefix);
  std::map<std::string, F32Tensor> prefixed;
  for (auto& [name, t] : testing::ReadTensors(dir + "/model.safetensors"))
    prefixed[prefix + name] = std::move(t);
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", prefixed).ok());
  return dir;
}

TEST(ModelLoad, AcceptsTheBertPrefixAndGivesTheSameVectors) {
  const std::string dir = CopyWithPrefix(testing::TinyModelDir(), "bert.");
  auto plain = Model::Load(testing::TinyModelDir(), {});
  auto with_prefix = Model::Load(dir, {});
  ASSERT_TRUE(plain.ok() && with_prefix.ok()) << with_prefix.status();
  EXPECT_EQ(EmbedOne(**plain, "a prefixed checkpoint"),
            EmbedOne(**with_prefix, "a prefixed checkpoint"));
}

TEST(ModelLoad, XlmRobertaAcceptsTheRobertaPrefixAndGivesTheSameVectors) {
  const std::string dir = CopyWithPrefix(testing::XlmRobertaModelDir(), "roberta.");
  auto plain = Model::Load(testing::XlmRobertaModelDir(), {});
  auto with_prefix = Model::Load(dir, {});
  ASSERT_TRUE(plain.ok() && with_prefix.ok()) << with_prefix.status();
  EXPECT_EQ((*plain)->config().max_sequence_length(), 8192);
  EXPECT_EQ((*plain)->max_content_tokens(), 8190);
  EXPECT_EQ(EmbedOne(**plain, "ein Text, un texte"), EmbedOne(**with_prefix, "ein Text, un texte"));
}

// RoBERTa, CamemBERT and DistilBERT as sentence-transformers and transformers save them: the
// base model's prefix or none, the same vectors; RoBERTa's window is its table less the
// padding offset, DistilBERT has no token types.
TEST(ModelLoad, BertKindUnderOtherNamesAcceptsItsPrefixAndGivesTheSameVectors) {
  const std::vector<std::pair<std::string, std::string>> families = {
      {testing::RobertaModelDir(), "roberta."},
      {testing::CamembertModelDir(), "roberta."},
      {testing::DistilBertModelDir(), "distilbert."},
      {testing::MpnetModelDir(), "mpnet."}};
  for (const auto& [model_dir, prefix] : families) {
    const std::string dir = CopyWithPrefix(model_dir, prefix);
    auto plain = Model::Load(model_dir, {});
    auto with_prefix = Model::Load(dir, {});
    ASSERT_TRUE(plain.ok() && with_prefix.ok()) << model_dir << ": " << with_prefix.status();
    EXPECT_EQ((*plain)->config().max_sequence_length(), 512) << model_dir;
    EXPECT_EQ(EmbedOne(**plain, "a river bank in spring"),
              EmbedOne(**with_prefix, "a river bank in spring"))
        << model_dir;
  }
  auto distilbert = Model::Load(testing::DistilBertModelDir(), {});
  ASSERT_TRUE(distilbert.ok()) << distilbert.status();
  EXPECT_EQ((*distilbert)->config().type_vocab_size, 0);
  EXPECT_EQ((*distilbert)->config().family, "distilbert");
}

TEST(ModelLoad, DistilBertConfigErrorsNameItsOwnFields) {
  const std::string dir = testing::CopyModelDir(testing::DistilBertModelDir(), "distil_config");
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j.erase("dim"); }, {"config.json", "'dim'"});
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["n_heads"] = 5; },
                      {"n_heads", "not divisible"});
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["activation"] = "tanh"; },
                      {"'activation'", "relu"});
  // ReLU, as some DistilBERT fine-tunes set it, is served: a different vector, not a refusal.
  auto gelu = Model::Load(dir, {});
  ASSERT_TRUE(gelu.ok()) << gelu.status();
  EditJson(dir + "/config.json", [](nlohmann::json& j) { j["activation"] = "relu"; });
  auto relu = Model::Load(dir, {});
  ASSERT_TRUE(relu.ok()) << relu.status();
  EXPECT_NE(EmbedOne(**gelu, "owls"), EmbedOne(**relu, "owls"));
}

TEST(ModelLoad, NomicBertConfigErrorsNameTheirGpt2Fields) {
  const std::string dir = testing::CopyModelDir(testing::NomicBertModelDir(), "nomic_config");
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j.erase("n_embd"); }, {"config.json", "n_embd"});
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["rotary_emb_fraction"] = 0.0; },
                      {"rotary_emb_fraction"});
  // Another activation is refused by the family lookup (NomicMoeConfigs... checks it); gelu
  // is v2's plain MLP (fc1, fc2), which a v1 checkpoint lacks.
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["activation_function"] = "gelu"; },
                      {"encoder.layers.0.mlp.fc1.weight"});
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["n_head"] = 5; }, {"n_head", "not divisible"});
  // A checkpoint with biases the config denies is read as the config says, so a missing bias
  // the config promises is a named missing tensor.
  ExpectConfigRefused(dir, [](nlohmann::json& j) { j["qkv_proj_bias"] = true; },
                      {"encoder.layers.0.attn.Wqkv.bias"});
  auto model = Model::Load(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->config().rotary.dim, 16);
  EXPECT_EQ((*model)->config().mlp, MlpKind::kGatedActivateSecond);
}

TEST(ModelLoad, GteAcceptsTheNewPrefixAndItsConfigErrorsNameTheirFields) {
  const std::string prefixed = CopyWithPrefix(testing::GteModelDir(), "new.");
  auto plain = Model::Load(testing::GteModelDir(), {});
  auto with_prefix = Model::Load(prefixed, {});
  ASSERT_TRUE(plain.ok() && with_prefix.ok()) << with_prefix.status();
  EXPECT_EQ((*plain)->config().mlp, MlpKind::kGatedActivateSecond);
  EXPECT_EQ((*plain)->config().rotary.static_ntk_factor, 2.0);
  EXPECT_EQ((*plain)->config().type_vocab_size, 0);
  EXPECT_EQ(EmbedOne(**plain, "long documents"), EmbedOne(**with_prefix, "long documents"));

  const std::string dir = testing::CopyModelDir(testing::GteModelDir(), "gte_config");
  ExpectConfigRefused(dir, [](Json& j) { j["rope_scaling"]["mixed_b"] = 0.5; },
                      {"rope_scaling.mixed_b"});
  ExpectConfigRefused(dir, [](Json& j) { j["rope_scaling"]["type"] = "dynamic"; },
                      {"rope_scaling", "'type'", "ntk"});
  ExpectConfigRefused(dir, [](Json& j) { j["pack_qkv"] = false; }, {"pack_qkv"});
  ExpectConfigRefused(dir, [](Json& j) { j["layer_norm_type"] = "rms_norm"; }, {"layer_norm_type"});
  ExpectConfigRefused(dir, [](Json& j) { j["position_embedding_type"] = "absolute"; },
                      {"position_embedding_type", "rope"});
  ExpectConfigRefused(dir, [](Json& j) { j["hidden_act"] = "tanh"; }, {"hidden_act", "tanh"});
  // Token types the config promises are a named missing tensor.
  ExpectConfigRefused(dir, [](Json& j) { j["type_vocab_size"] = 2; },
                      {"embeddings.token_type_embeddings.weight"});
}

// A Qwen3-shaped decoder: head_dim from its config (32, not hidden / heads = 16), 4 query heads
// on 2 key/value heads, causal, last-token pooling; weights with or without `model.`; a window
// or rope scaling it does not implement refused by name; Mistral's sliding_window served as a
// causal band of window - 1 keys back.
TEST(ModelLoad, DecoderConfigsReadTheirShapeAndRefuseWhatTheyDoNotImplement) {
  auto plain = Model::Load(testing::Qwen3ModelDir(), {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  const EncoderConfig& config = (*plain)->config();
  EXPECT_EQ(config.head_dim(), 32);
  EXPECT_EQ(config.hidden_size / config.num_attention_heads, 16);
  EXPECT_EQ(config.key_value_heads(), 2);
  EXPECT_TRUE(config.causal);
  EXPECT_TRUE(config.rms_norm);
  EXPECT_EQ(config.rotary.base, 1e6);
  EXPECT_EQ((*plain)->pooling(), PoolingMode::kLastToken);
  const std::string prefixed = CopyWithPrefix(testing::Qwen3ModelDir(), "model.");
  auto with_prefix = Model::Load(prefixed, {});
  ASSERT_TRUE(with_prefix.ok()) << with_prefix.status();
  EXPECT_EQ(EmbedOne(**plain, "long documents"), EmbedOne(**with_prefix, "long documents"));

  const std::string dir = testing::CopyModelDir(testing::Qwen3ModelDir(), "qwen3_config");
  auto load_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    const std::string original = testing::ReadFile(dir + "/config.json");
    EditJson(dir + "/config.json", edit);
    auto model = Model::Load(dir, {});
    testing::WriteFile(dir + "/config.json", original);
    return model;
  };
  auto expect_error = [&](const std::function<void(nlohmann::json&)>& edit,
                          const std::vector<std::string>& words) {
    auto model = load_with(edit);
    EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss) << model.status();
    for (const auto& word : words) EXPECT_THAT(model.status().message(), HasSubstr(word));
  };
  expect_error([](Json& j) { j["use_sliding_window"] = true; }, {"use_sliding_window"});
  expect_error(
      [](Json& j) {
        j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
      },
      {"rope_scaling", "yarn"});
  expect_error([](Json& j) { j["num_key_value_heads"] = 3; }, {"num_key_value_heads", "3"});
  expect_error([](Json& j) { j["head_dim"] = 16; }, {"self_attn.q_proj.weight", "[64, 64]"});
  expect_error([](Json& j) { j["hidden_act"] = "tanh"; }, {"hidden_act", "tanh"});
  // Qwen3 carries sliding_window but applies it only under use_sliding_window.
  auto unwindowed = load_with([](Json& j) { j["sliding_window"] = 64, j["is_causal"] = false; });
  ASSERT_TRUE(unwindowed.ok()) << unwindowed.status();
  EXPECT_TRUE((*unwindowed)->config().layer_bands.empty());
  for (const char* field : {"use_bidirectional_attention", "is_causal"}) {
    auto bidirectional =
        load_with([&](Json& j) { j[field] = std::string(field) == "is_causal" ? false : true; });
    ASSERT_TRUE(bidirectional.ok()) << bidirectional.status();
    EXPECT_FALSE((*bidirectional)->config().causal) << field;
  }
  auto mistral = Json::parse(testing::ReadFile(dir + "/config.json"));
  mistral["model_type"] = "mistral";
  mistral["sliding_window"] = 64;
  auto windowed = ParseEncoderConfig("config.json", mistral.dump());
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_EQ(windowed->layer_bands, std::vector<int64_t>(windowed->num_hidden_layers, 63));
  EXPECT_EQ(windowed->local_attention_keys(), 64);  // i - 63 .. i
  mistral["sliding_window"] = 8192;                 // the whole window: no band
  windowed = ParseEncoderConfig("config.json", mistral.dump());
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_TRUE(windowed->layer_bands.empty());
  for (const auto& [window, causal] : {std::pair{64, false}, std::pair{1, true}}) {
    mistral["sliding_window"] = window;
    mistral["is_causal"] = causal;
    windowed = ParseEncoderConfig("config.json", mistral.dump());
    EXPECT_EQ(windowed.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(windowed.status().message(), HasSubstr("'sliding_window' is"));
  }
}

// ModernBERT's two config spellings (the legacy fields, and transformers v5's layer_types and
// rope_parameters) describe the same model, and its weights load with or without `model.`.
TEST(ModelLoad, ModernBertSpellingsAndPrefixGiveTheSameVectors) {
  auto legacy = Model::Load(testing::ModernBertModelDir(), {});
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ((*legacy)->config().layer_bands, (std::vector<int64_t>{0, 64, 64, 0}));
  EXPECT_EQ((*legacy)->config().rotary.base, 160000.0);
  EXPECT_EQ((*legacy)->config().local_rotary_base, 10000.0);
  EXPECT_FALSE((*legacy)->config().norm_bias);
  const std::string text = "a long document read in bands";
  const std::vector<float> expected = EmbedOne(**legacy, text);

  const std::string v5 = CopyWithPrefix(testing::ModernBertModelDir(), "model.");
  EditJson(v5 + "/config.json", [](Json& j) {
    j.erase("global_attn_every_n_layers");
    j.erase("global_rope_theta");
    j.erase("local_rope_theta");
    j["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention",
                        "full_attention"};
    j["rope_parameters"] = {
        {"full_attention", {{"rope_type", "default"}, {"rope_theta", 160000}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000}}}};
  });
  auto modern = Model::Load(v5, {});
  ASSERT_TRUE(modern.ok()) << modern.status();
  EXPECT_EQ(EmbedOne(**modern, text), expected);

  auto expect_error = [&](const std::function<void(nlohmann::json&)>& edit,
                          const std::vector<std::string>& words) {
    const std::string original = testing::ReadFile(v5 + "/config.json");
    EditJson(v5 + "/config.json", edit);
    auto model = Model::Load(v5, {});
    EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss) << model.status();
    for (const auto& word : words) EXPECT_THAT(model.status().message(), HasSubstr(word));
    testing::WriteFile(v5 + "/config.json", original);
  };
  expect_error([](Json& j) { j["layer_types"].erase(0); }, {"layer_types", "4 layers"});
  expect_error([](Json& j) { j["layer_types"][1] = "chunked_attention"; },
               {"layer_types[1]", "chunked_attention"});
  expect_error([](Json& j) { j["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; },
               {"rope_parameters.sliding_attention", "rope_type", "yarn"});
  expect_error([](Json& j) { j["local_attention"] = 1; }, {"local_attention"});
  // Biases the config promises are named missing tensors.
  expect_error([](Json& j) { j["norm_bias"] = true; }, {"embeddings.norm.bias"});
  expect_error([](Json& j) { j["mlp_bias"] = true; }, {"mlp.Wi.bias"});
}

// GTE's logn scale: ln(n) / ln(trained length), at least 1 with clip1, 1 when off.
TEST(ModelLoad, LognScaleIsLnNOverLnTheTrainedLength) {
  LognScale logn;
  EXPECT_EQ(logn.For(100), 1.0);
  logn.enabled = true;
  logn.trained_length = 8192;
  EXPECT_DOUBLE_EQ(logn.For(512), std::log(512.0) / std::log(8192.0));
  EXPECT_DOUBLE_EQ(logn.For(8192), 1.0);
  logn.clip_at_one = true;
  EXPECT_EQ(logn.For(512), 1.0);
  EXPECT_DOUBLE_EQ(logn.For(16384), std::log(16384.0) / std::log(8192.0));
}

// JinaBERT v2 ships as model_type "bert" with ALiBi positions: never loaded as plain BERT, and
// a plain BERT checkpoint is never loaded as JinaBERT.
TEST(ModelLoad, AlibiAndPlainBertNeverLoadAsEachOther) {
  auto jina = Model::Load(testing::JinaBertModelDir(), {});
  ASSERT_TRUE(jina.ok()) << jina.status();
  EXPECT_EQ((*jina)->config().positions, PositionKind::kAlibi);
  EXPECT_EQ((*jina)->config().mlp, MlpKind::kGatedActivateFirst);

  const std::string unmarked = testing::CopyModelDir(testing::JinaBertModelDir(), "unmarked");
  EditJson(unmarked + "/config.json", [](Json& j) { j.erase("position_embedding_type"); });
  auto as_bert = Model::Load(unmarked, {});
  EXPECT_EQ(as_bert.status().code(), absl::StatusCode::kDataLoss) << as_bert.status();
  EXPECT_THAT(as_bert.status().message(), HasSubstr("embeddings.position_embeddings.weight"));

  const std::string marked = testing::CopyModelDir(testing::TinyModelDir(), "marked");
  EditJson(marked + "/config.json", [](Json& j) { j["position_embedding_type"] = "alibi"; });
  auto as_jina = Model::Load(marked, {});
  EXPECT_EQ(as_jina.status().code(), absl::StatusCode::kDataLoss) << as_jina.status();
  EXPECT_THAT(as_jina.status().message(), HasSubstr("mlp.gated_layers.weight"));

  EditJson(unmarked + "/config.json", [](Json& j) {
    j["position_embedding_type"] = "alibi";
    j["feed_forward_type"] = "swiglu";
  });
  auto bad = Model::Load(unmarked, {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr("feed_forward_type"), HasSubstr("geglu")));
}

// The standard slopes, and the rule for a head count that is not a power of two.
TEST(ModelLoad, AlibiSlopesFollowTheirAuthorsRule) {
  EXPECT_THAT(AlibiSlopes(8), ::testing::ElementsAre(0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625,
                                                     0.0078125, 0.00390625));
  const std::vector<double> twelve = AlibiSlopes(12);
  ASSERT_EQ(twelve.size(), 12u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(twelve[i], std::pow(2.0, -(i + 1)));
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(twelve[8 + i], std::pow(2.0, -0.5 - i));
}

TEST(ModelLoad, ABertConfigWithAnotherPositionTypeIsNeverLoadedAsBert) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "position_type");
  EditJson(dir + "/config.json", [](Json& j) { j["position_embedding_type"] = "relative_key"; });
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << model.status();
  EXPECT_THAT(model.status().message(),
              AllOf(HasSubstr("position_embedding_type"), HasSubstr("relative_key"),
                    HasSubstr("absolute"), HasSubstr("alibi")));
}

// docs/models.md's architecture table is the registry's: every model_type with its checkpoints.
TEST(ModelLoad, ModelsPageListsEveryArchitectureAndItsCheckpoints) {
  const std::string readme = testing::ReadFile(std::string(EMB_SOURCE_DIR) + "/docs/models.md");
  for (const ArchitectureSpec& spec : AllArchitectures()) {
    EXPECT_THAT(readme, HasSubstr("`model_type: " + spec.model_type + "`"));
    for (absl::string_view name : absl::StrSplit(spec.known_checkpoints, ", "))
      EXPECT_THAT(readme, HasSubstr(std::string(name))) << spec.model_type;
  }
}

TEST(ModelLoad, ShardedCheckpointLoadsLikeTheSingleFile) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "sharded");
  auto tensors = testing::ReadTensors(dir + "/model.safetensors");
  fs::remove(dir + "/model.safetensors");
  std::map<std::string, F32Tensor> shard1, shard2;
  nlohmann::json weight_map;
  for (auto& [name, t] : tensors) {
    const bool first = name.find("encoder.layer.1.") == std::string::npos;
    weight_map[name] =
        first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    (first ? shard1 : shard2)[name] = std::move(t);
  }
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00001-of-00002.safetensors", shard1).ok());
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00002-of-00002.safetensors", shard2).ok());
  testing::WriteFile(
      dir + "/model.safetensors.index.json",
      nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump());
  auto plain = Model::Load(testing::TinyModelDir(), {});
  auto sharded = Model::Load(dir, {});
  ASSERT_TRUE(plain.ok() && sharded.ok()) << sharded.status();
  EXPECT_EQ(EmbedOne(**plain, "sharded weights"), EmbedOne(**sharded, "sharded weights"));

  // An index entry pointing at the wrong shard names the tensor and the shard.
  EditJson(dir + "/model.safetensors.index.json", [](nlohmann::json& j) {
    j["weight_map"][kQuery1] = "model-00001-of-00002.safetensors";
  });
  auto wrong = Checkpoint::Open(dir);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wrong.status().message(), AllOf(HasSubstr(kQuery1), HasSubstr("00001")));

  // A shard path outside the directory is refused.
  EditJson(dir + "/model.safetensors.index.json",
           [](nlohmann::json& j) { j["weight_map"][kQuery1] = "../../etc/passwd"; });
  EXPECT_THAT(Checkpoint::Open(dir).status().message(), HasSubstr("invalid shard"));
}

TEST(ModelLoad, MissingTensorIsNamed) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "missing");
  auto tensors = testing::ReadTensors(dir + "/model.safetensors");
  tensors.erase(kQuery1);
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(model.status().message(), HasSubstr(kQuery1));
}

TEST(ModelLoad, ShapeMismatchWithConfigIsNamed) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "shape");
  EditJson(dir + "/config.json", [](nlohmann::json& j) { j["intermediate_size"] = 100; });
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(model.status().message(),
              AllOf(HasSubstr("intermediate.dense.weight"), HasSubstr("100")));
}

// A NaN or infinite weight once loaded and served NaN vectors with status OK.
TEST(ModelLoad, NonFiniteWeightsAreRefusedNamingTheTensor) {
  for (float bad : {std::nanf(""), INFINITY}) {
    const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "nonfinite");
    auto tensors = testing::ReadTensors(dir + "/model.safetensors");
    tensors[kQuery1].values[7] = bad;
    ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
    auto model = Model::Load(dir, {});
    EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(model.status().message(), AllOf(HasSubstr(kQuery1), HasSubstr("NaN or infinite")));
  }
}

TEST(ModelLoad, UnknownModelTypeListsTheSupportedOnes) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "type");
  EditJson(dir + "/config.json", [](nlohmann::json& j) { j["model_type"] = "gpt2"; });
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), AllOf(HasSubstr("gpt2"), HasSubstr("supported: bert")));
}

TEST(ModelLoad, BadConfigFieldsAreNamed) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "config");
  EditJson(dir + "/config.json", [](nlohmann::json& j) { j["num_attention_heads"] = 5; });
  EXPECT_THAT(Model::Load(dir, {}).status().message(), HasSubstr("not divisible"));
  EditJson(dir + "/config.json", [](nlohmann::json& j) {
    j["num_attention_heads"] = 4;
    j["hidden_act"] = "mish";
  });
  EXPECT_THAT(Model::Load(dir, {}).status().message(), HasSubstr("hidden_act"));
  EditJson(dir + "/config.json", [](nlohmann::json& j) {
    j["hidden_act"] = "gelu";
    j.erase("hidden_size");
  });
  EXPECT_THAT(Model::Load(dir, {}).status().message(),
              AllOf(HasSubstr("config.json"), HasSubstr("hidden_size")));
  testing::WriteFile(dir + "/config.json", "{not json");
  EXPECT_EQ(Model::Load(dir, {}).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ModelLoad, MissingFilesAreNotFound) {
  EXPECT_EQ(Model::Load("/nonexistent/model", {}).status().code(), absl::StatusCode::kNotFound);
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "nofiles");
  fs::remove(dir + "/model.safetensors");
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("model.safetensors"));
}

TEST(ModelLoad, UnsupportedPoolingModeIsNamed) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "pooling");
  EditJson(dir + "/1_Pooling/config.json",
           [](nlohmann::json& j) { j["pooling_mode_mean_sqrt_len_tokens"] = true; });
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("pooling_mode_mean_sqrt_len_tokens"));
}

// EmbeddingGemma's config: its scales, bands and rotary bases, in either spelling of the layer
// kinds; what Gemma3 has and this encoder does not run is refused naming the field.
TEST(ModelLoad, Gemma3ConfigsReadTheirScalesAndBandsAndRefuseSoftcapping) {
  const Json base = {{"model_type", "gemma3_text"},
                     {"vocab_size", 9000},
                     {"hidden_size", 64},
                     {"num_hidden_layers", 6},
                     {"num_attention_heads", 4},
                     {"num_key_value_heads", 1},
                     {"head_dim", 32},
                     {"intermediate_size", 256},
                     {"max_position_embeddings", 2048},
                     {"query_pre_attn_scalar", 256},
                     {"sliding_window", 512},
                     {"use_bidirectional_attention", true},
                     {"rope_theta", 1000000.0},
                     {"rope_local_base_freq", 10000.0},
                     {"hidden_activation", "gelu_pytorch_tanh"},
                     {"rms_norm_eps", 1e-6}};
  auto config = ParseEncoderConfig("config.json", base.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->family, "gemma3");
  EXPECT_DOUBLE_EQ(config->attention_scale, 1.0 / 16);
  EXPECT_DOUBLE_EQ(config->embedding_scale, 8.0);
  EXPECT_FALSE(config->causal);
  EXPECT_EQ(config->hidden_act, Activation::kGeluTanh);
  // No layer_types: every sixth layer full (sliding_window_pattern's default). Bidirectional,
  // a sliding layer reaches sliding_window // 2 each side (Gemma3TextConfig's rewrite).
  EXPECT_EQ(config->layer_bands, (std::vector<int64_t>{256, 256, 256, 256, 256, 0}));
  EXPECT_DOUBLE_EQ(config->rotary.base, 1000000.0);
  EXPECT_DOUBLE_EQ(config->local_rotary_base, 10000.0);
  Json typed = base;
  typed["layer_types"] = {"full_attention",    "sliding_attention", "full_attention",
                          "sliding_attention", "sliding_attention", "full_attention"};
  typed.erase("rope_theta");
  typed.erase("rope_local_base_freq");
  typed["rope_parameters"] = {
      {"full_attention", {{"rope_type", "default"}, {"rope_theta", 5e5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  config = ParseEncoderConfig("config.json", typed.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->layer_bands, (std::vector<int64_t>{0, 256, 0, 256, 256, 0}));
  EXPECT_DOUBLE_EQ(config->rotary.base, 5e5);
  // An odd window: 17 // 2 + 1 = 9 exclusive, radius 8. Causal (Gemma3's own default):
  // i - window < j <= i, so 16 keys back.
  Json odd = base;
  odd["sliding_window"] = 17;
  config = ParseEncoderConfig("config.json", odd.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->layer_bands, (std::vector<int64_t>{8, 8, 8, 8, 8, 0}));
  odd["use_bidirectional_attention"] = false;
  config = ParseEncoderConfig("config.json", odd.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->causal);
  EXPECT_EQ(config->layer_bands, (std::vector<int64_t>{16, 16, 16, 16, 16, 0}));
  for (const auto& [field, value, message] :
       std::vector<std::tuple<std::string, Json, std::string>>{
           {"attn_logit_softcapping", Json(50.0), "'attn_logit_softcapping' is 50"},
           {"layer_types", Json::array({"full_attention"}), "'layer_types' must list 6"},
           {"layer_types", Json(std::vector<std::string>(6, "chunked_attention")),
            "'layer_types[0]' is \"chunked_attention\""},
           {"sliding_window", Json(1), "'sliding_window' must be >= 2"},
           {"rope_scaling", Json({{"rope_type", "linear"}, {"factor", 8.0}}),
            "'rope_scaling' is"}}) {
    Json json = base;
    json[field] = value;
    auto refused = ParseEncoderConfig("config.json", json.dump());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << field;
    EXPECT_THAT(refused.status().message(), HasSubstr(message)) << field;
  }
}

// T5 (gtr-t5's keys): no position table, so its window defaults to 512; unscaled logits; the
// relative bias's reach from the config; feed_forward_proj picks ReLU or the gated GELU, and
// any other is refused listing the two.
TEST(ModelLoad, T5ConfigsChooseTheirFeedForwardAndRefuseWhatTheyDoNotRun) {
  const Json base = {{"model_type", "t5"}, {"vocab_size", 32128},
                     {"d_model", 64},      {"d_kv", 16},
                     {"num_heads", 4},     {"num_layers", 2},
                     {"d_ff", 256},        {"relative_attention_max_distance", 256}};
  auto config = ParseEncoderConfig("config.json", base.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->family, "t5");
  EXPECT_EQ(config->max_position_embeddings, 512);
  EXPECT_EQ(config->mlp, MlpKind::kPlain);
  EXPECT_EQ(config->hidden_act, Activation::kRelu);
  EXPECT_DOUBLE_EQ(config->attention_scale, 1.0);
  EXPECT_EQ(config->relative_attention_buckets, 32);
  EXPECT_EQ(config->relative_attention_max_distance, 256);
  Json gated = base;
  gated["feed_forward_proj"] = "gated-gelu";
  gated["n_positions"] = 1024;
  config = ParseEncoderConfig("config.json", gated.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->family, "t5_gated");
  EXPECT_EQ(config->mlp, MlpKind::kGatedActivateFirst);
  EXPECT_EQ(config->hidden_act, Activation::kGeluTanh);
  EXPECT_EQ(config->max_position_embeddings, 1024);
  Json silu = base;
  silu["feed_forward_proj"] = "gated-silu";
  config = ParseEncoderConfig("config.json", silu.dump());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("feed_forward_proj"), HasSubstr("relu"), HasSubstr("gated-gelu")));
  Json buckets = base;
  buckets["relative_attention_num_buckets"] = 6;
  config = ParseEncoderConfig("config.json", buckets.dump());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(config.status().message(), HasSubstr("'relative_attention_num_buckets' 6"));
}

// nomic-embed-text-v2-moe's keys: gelu picks the expert family, whose layers 1, 3, ... route
// to experts; experts on a gated (v1) MLP, a top-k past the experts and normalised expert
// weights are refused naming the field.
TEST(ModelLoad, NomicMoeConfigsNameTheirExpertLayersAndRefuseWhatTheyDoNotRun) {
  const Json base = {{"model_type", "nomic_bert"},
                     {"vocab_size", 9000},
                     {"n_embd", 64},
                     {"n_head", 4},
                     {"n_layer", 4},
                     {"n_inner", 256},
                     {"n_positions", 2048},
                     {"activation_function", "gelu"},
                     {"moe_every_n_layers", 2},
                     {"num_experts", 8},
                     {"moe_top_k", 2},
                     {"moe_normalize_expert_weights", false},
                     {"type_vocab_size", 1}};
  auto config = ParseEncoderConfig("config.json", base.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->family, "nomic_bert_moe");
  EXPECT_EQ(config->mlp, MlpKind::kPlain);
  EXPECT_EQ(config->hidden_act, Activation::kGeluErf);
  EXPECT_EQ(config->num_experts, 8);
  EXPECT_EQ(config->moe_top_k, 2);
  std::vector<bool> experts;
  for (int64_t i = 0; i < 4; ++i) experts.push_back(config->IsMoeLayer(i));
  EXPECT_EQ(experts, (std::vector<bool>{false, true, false, true}));
  for (const auto& [field, value, message] :
       std::vector<std::tuple<std::string, Json, std::string>>{
           {"activation_function", Json("swiglu"), "'moe_every_n_layers' is 2 with a gated MLP"},
           {"moe_top_k", Json(9), "'num_experts' 8 and 'moe_top_k' 9"},
           {"moe_normalize_expert_weights", Json(1), "'moe_normalize_expert_weights' is 1"}}) {
    Json json = base;
    json[field] = value;
    auto refused = ParseEncoderConfig("config.json", json.dump());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << field;
    EXPECT_THAT(refused.status().message(), HasSubstr(message)) << field;
  }
  Json relu = base;
  relu["activation_function"] = "relu";
  auto refused = ParseEncoderConfig("config.json", relu.dump());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("activation_function"), HasSubstr("swiglu"), HasSubstr("gelu")));
}

// jina-embeddings-v3's keys: rotary XLM-R, its tasks, rank and alpha, its Matryoshka widths;
// damaged adapter lists, odd rotary widths and unordered widths are refused naming the field.
TEST(ModelLoad, JinaV3ConfigsNameTheirTasksAndRefuseWhatTheyDoNotRun) {
  const Json base = {{"model_type", "xlm-roberta"},
                     {"architectures", {"XLMRobertaLoRA"}},
                     {"vocab_size", 9000},
                     {"hidden_size", 64},
                     {"num_attention_heads", 4},
                     {"num_hidden_layers", 2},
                     {"intermediate_size", 256},
                     {"max_position_embeddings", 8194},
                     {"position_embedding_type", "rotary"},
                     {"rotary_emb_base", 20000.0},
                     {"lora_adaptations", {"retrieval.query", "retrieval.passage"}},
                     {"lora_rank", 4},
                     {"lora_alpha", 1},
                     {"matryoshka_dimensions", {32, 64}}};
  auto config = ParseEncoderConfig("config.json", base.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->family, "xlm-roberta-flash");
  EXPECT_EQ(config->rotary.dim, 16);
  EXPECT_DOUBLE_EQ(config->rotary.base, 20000.0);
  EXPECT_THAT(config->adapters, ElementsAre("retrieval.query", "retrieval.passage"));
  EXPECT_DOUBLE_EQ(config->adapter_scale, 0.25);
  EXPECT_THAT(config->matryoshka_dimensions, ElementsAre(32, 64));
  Json absolute = base;
  absolute["position_embedding_type"] = "absolute";
  EXPECT_EQ(ParseEncoderConfig("config.json", absolute.dump())->family, "xlm-roberta");
  for (const auto& [field, value, message] :
       std::vector<std::tuple<std::string, Json, std::string>>{
           {"lora_adaptations", Json::array(), "'lora_adaptations' is []"},
           {"lora_adaptations", Json({"a", "a"}), "holds \"a\"; allowed distinct"},
           {"lora_adaptations", Json({"a", 3}), "holds 3"},
           {"lora_rank", Json(2048), "'lora_rank' is 2048"},
           {"rotary_emb_dim", Json(7), "'rotary_emb_dim' is 7"},
           {"matryoshka_dimensions", Json({64, 32}), "'matryoshka_dimensions' is [64,32]"},
           {"matryoshka_dimensions", Json({32, 128}), "allowed ascending widths in [1, 64]"}}) {
    Json json = base;
    json[field] = value;
    auto refused = ParseEncoderConfig("config.json", json.dump());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << field << " " << value;
    EXPECT_THAT(refused.status().message(), HasSubstr(message)) << field << " " << value;
  }
}

// Config integers stay below 2^31: 4 x hidden_size and pad_token_id + 1 once overflowed int64
// for values the reader accepted.
TEST(ModelLoad, ConfigIntegersPastTwoToTheThirtyOneAreRefusedNamingTheField) {
  const Json base = Json::parse(testing::ReadFile(testing::XlmRobertaModelDir() + "/config.json"));
  for (const auto& [field, value] : std::vector<std::pair<std::string, Json>>{
           {"hidden_size", Json(int64_t{1} << 62)},
           {"vocab_size", Json(uint64_t{1} << 63)},
           {"max_position_embeddings", Json(3e9)},
           {"pad_token_id", Json(std::numeric_limits<int64_t>::max())}}) {
    Json json = base;
    json[field] = value;
    auto config = ParseEncoderConfig("config.json", json.dump());
    EXPECT_EQ(config.status().code(), absl::StatusCode::kDataLoss) << field;
    EXPECT_THAT(config.status().message(), HasSubstr("'" + field + "' must be"));
  }
}

}  // namespace
}  // namespace embedding::model_store
