#include "model_store/demo_model_writer.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/architecture.h"
#include "model_store/demo_vocabulary.h"
#include "model_store/safetensors_writer.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kDemoModelType[] = "bert";

absl::Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat(path.string(), ": write failed"));
  return absl::OkStatus();
}

absl::Status ValidateSpec(const DemoModelSpec& spec) {
  auto positive = [](const char* field, int value) -> absl::Status {
    if (value > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, " must be > 0"));
  };
  RETURN_IF_ERROR(positive("num_layers", spec.num_layers));
  RETURN_IF_ERROR(positive("hidden_size", spec.hidden_size));
  RETURN_IF_ERROR(positive("num_heads", spec.num_heads));
  if (spec.hidden_size % spec.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hidden_size: ", spec.hidden_size, " must be divisible by num_heads ", spec.num_heads));
  }
  if (spec.max_positions < 3)
    return absl::InvalidArgumentError("max_positions: must be >= 3 ([CLS] text [SEP])");
  if (spec.pooling != "cls" && spec.pooling != "mean" && spec.pooling != "max")
    return absl::InvalidArgumentError("pooling: must be one of cls, mean, max");
  return absl::OkStatus();
}

// Seeded weights scaled by 1/sqrt(fan_in), so attention logits are O(1) and a temperature
// visibly sharpens them; norms get weights near 1 so a reference must really apply them.
class WeightFactory {
 public:
  explicit WeightFactory(uint64_t seed) : rng_(seed) {}

  F32Tensor Normal(std::vector<int64_t> shape, double stddev, double mean = 0.0) {
    F32Tensor t;
    t.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::normal_distribution<float> dist(0.0f, 1.0f);
    t.values.resize(n);
    for (auto& v : t.values) v = static_cast<float>(mean + stddev * dist(rng_));
    return t;
  }

  void Linear(std::map<std::string, F32Tensor>* out, const std::string& name, int64_t rows,
              int64_t cols) {
    (*out)[name + ".weight"] = Normal({rows, cols}, 1.0 / std::sqrt(static_cast<double>(cols)));
    (*out)[name + ".bias"] = Normal({rows}, 0.02);
  }

  void Norm(std::map<std::string, F32Tensor>* out, const std::string& name, int64_t size) {
    (*out)[name + ".weight"] = Normal({size}, 0.1, 1.0);
    (*out)[name + ".bias"] = Normal({size}, 0.05);
  }

 private:
  std::mt19937_64 rng_;
};

// Every weight the architecture names, shaped for `spec` (saved without the base prefix).
std::map<std::string, F32Tensor> MakeWeights(const DemoModelSpec& spec,
                                             const ArchitectureSpec& arch, int64_t vocab_size,
                                             int64_t intermediate) {
  WeightFactory f(spec.seed);
  const int64_t h = spec.hidden_size;
  std::map<std::string, F32Tensor> w;
  w[arch.word_embeddings + ".weight"] = f.Normal({vocab_size, h}, 0.5);
  w[arch.position_embeddings + ".weight"] = f.Normal({spec.max_positions, h}, 0.5);
  w[arch.token_type_embeddings + ".weight"] = f.Normal({2, h}, 0.5);
  f.Norm(&w, arch.embeddings_norm, h);
  for (int i = 0; i < spec.num_layers; ++i) {
    const std::string layer = absl::StrCat(arch.layer_prefix, i, ".");
    for (const std::string* square : {&arch.query, &arch.key, &arch.value, &arch.attention_output})
      f.Linear(&w, layer + *square, h, h);
    f.Norm(&w, layer + arch.attention_norm, h);
    f.Linear(&w, layer + arch.intermediate, intermediate, h);
    f.Linear(&w, layer + arch.output, h, intermediate);
    f.Norm(&w, layer + arch.output_norm, h);
  }
  return w;
}

Json TokenizerJson(const std::vector<std::string>& vocab) {
  Json vocab_map = Json::object();
  for (size_t i = 0; i < vocab.size(); ++i) vocab_map[vocab[i]] = i;
  Json added = Json::array();
  for (int i = 0; i < 5; ++i) {
    added.push_back({{"id", i},
                     {"content", vocab[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  auto special = [](const char* name) {
    return Json{{"SpecialToken", {{"id", name}, {"type_id", 0}}}};
  };
  auto sequence = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  Json post = {{"type", "TemplateProcessing"},
               {"single", {special("[CLS]"), sequence("A", 0), special("[SEP]")}},
               {"pair",
                {special("[CLS]"),
                 sequence("A", 0),
                 special("[SEP]"),
                 sequence("B", 1),
                 {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 1}}}}}},
               {"special_tokens",
                {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
                 {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", post},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab_map}}}};
}

}  // namespace

absl::Status WriteDemoModel(const std::string& dir, const DemoModelSpec& spec) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  ASSIGN_OR_RETURN(const ArchitectureSpec* arch, FindArchitecture(kDemoModelType));
  ASSIGN_OR_RETURN(std::vector<std::string> vocab,
                   BuildDemoVocabulary(spec.word_list, spec.vocab_size));
  const int64_t intermediate =
      spec.intermediate_size > 0 ? spec.intermediate_size : 4 * spec.hidden_size;
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root / "1_Pooling", ec);
  if (!ec) fs::create_directories(root / "2_Normalize", ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": ", ec.message()));

  const Json config = {{"architectures", {"BertModel"}},
                       {"model_type", arch->model_type},
                       {"vocab_size", vocab.size()},
                       {"hidden_size", spec.hidden_size},
                       {"num_hidden_layers", spec.num_layers},
                       {"num_attention_heads", spec.num_heads},
                       {"intermediate_size", intermediate},
                       {"max_position_embeddings", spec.max_positions},
                       {"type_vocab_size", 2},
                       {"hidden_act", "gelu"},
                       {"layer_norm_eps", 1e-12},
                       {"pad_token_id", 0},
                       {"demo_model", true},
                       {"demo_seed", spec.seed}};
  RETURN_IF_ERROR(WriteText(root / "config.json", config.dump(2)));
  RETURN_IF_ERROR(WriteText(root / "tokenizer.json", TokenizerJson(vocab).dump()));
  const Json tokenizer_config = {{"do_lower_case", true},
                                 {"unk_token", "[UNK]"},
                                 {"cls_token", "[CLS]"},
                                 {"sep_token", "[SEP]"},
                                 {"pad_token", "[PAD]"},
                                 {"mask_token", "[MASK]"},
                                 {"model_max_length", spec.max_positions}};
  RETURN_IF_ERROR(WriteText(root / "tokenizer_config.json", tokenizer_config.dump(2)));
  const Json modules = Json::array({{{"idx", 0},
                                     {"name", "0"},
                                     {"path", ""},
                                     {"type", "sentence_transformers.models.Transformer"}},
                                    {{"idx", 1},
                                     {"name", "1"},
                                     {"path", "1_Pooling"},
                                     {"type", "sentence_transformers.models.Pooling"}},
                                    {{"idx", 2},
                                     {"name", "2"},
                                     {"path", "2_Normalize"},
                                     {"type", "sentence_transformers.models.Normalize"}}});
  RETURN_IF_ERROR(WriteText(root / "modules.json", modules.dump(2)));
  const Json pooling = {{"word_embedding_dimension", spec.hidden_size},
                        {"pooling_mode_cls_token", spec.pooling == "cls"},
                        {"pooling_mode_mean_tokens", spec.pooling == "mean"},
                        {"pooling_mode_max_tokens", spec.pooling == "max"},
                        {"pooling_mode_mean_sqrt_len_tokens", false}};
  RETURN_IF_ERROR(WriteText(root / "1_Pooling" / "config.json", pooling.dump(2)));
  const Json st = {{"prompts", {{"query", "query: "}, {"passage", "passage: "}}},
                   {"default_prompt_name", nullptr}};
  RETURN_IF_ERROR(WriteText(root / "config_sentence_transformers.json", st.dump(2)));
  RETURN_IF_ERROR(
      WriteText(root / "README.md",
                "# Demo model\n\nA BERT-shaped model with seeded random weights, written "
                "by write_demo_model. Its vectors are NOT semantically meaningful: use it "
                "to try, test and benchmark the service, never for retrieval.\n"));
  return WriteSafetensors(
      (root / "model.safetensors").string(),
      MakeWeights(spec, *arch, static_cast<int64_t>(vocab.size()), intermediate));
}

}  // namespace embedding::model_store
