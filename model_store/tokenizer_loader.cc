// Tokenizer::Load: reads the Hugging Face tokenizer files into a TokenizerConfig + vocabulary.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/tokenizer.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;
using Vocab = std::unordered_map<std::string, int32_t>;

absl::StatusOr<Json> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  Json json = Json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(path.string(), ": not a well-formed JSON object"));
  return json;
}

bool BoolOr(const Json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

// tokenizer_config.json writes special tokens as strings or as {"content": ...} objects.
std::string TokenOr(const Json& obj, const char* key, const std::string& fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return fallback;
}

absl::StatusOr<int32_t> IdOf(const Vocab& vocab, const std::string& token,
                             const std::string& where) {
  auto it = vocab.find(token);
  if (it == vocab.end())
    return absl::DataLossError(absl::StrCat(where, ": token '", token, "' is not in the vocab"));
  return it->second;
}

absl::Status ParseNormalizer(const std::string& label, const Json& normalizer,
                             TokenizerConfig* config) {
  if (normalizer.is_null()) {
    config->normalize = false;
    return absl::OkStatus();
  }
  const std::string type = normalizer.value("type", "");
  if (type != "BertNormalizer") {
    return absl::InvalidArgumentError(absl::StrCat(label, ": normalizer type '", type,
                                                   "' is not supported (supported: "
                                                   "BertNormalizer, null)"));
  }
  config->clean_text = BoolOr(normalizer, "clean_text", true);
  config->handle_chinese_chars = BoolOr(normalizer, "handle_chinese_chars", true);
  config->lowercase = BoolOr(normalizer, "lowercase", true);
  config->strip_accents = BoolOr(normalizer, "strip_accents", config->lowercase);
  return absl::OkStatus();
}

// TemplateProcessing ("single" list) or BertProcessing ("cls"/"sep" pairs); null adds nothing.
absl::Status ParsePostProcessor(const std::string& label, const Json& post, const Vocab& vocab,
                                TokenizerConfig* config) {
  if (post.is_null()) return absl::OkStatus();
  const std::string type = post.value("type", "");
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const Json& pair = post.value(key, Json());
      if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
        return absl::DataLossError(
            absl::StrCat(label, ": post_processor.", key, " must be [token, id]"));
      (std::string(key) == "cls" ? config->prefix_ids : config->suffix_ids)
          .push_back(pair[1].get<int32_t>());
    }
    return absl::OkStatus();
  }
  if (type != "TemplateProcessing") {
    return absl::InvalidArgumentError(absl::StrCat(label, ": post_processor type '", type,
                                                   "' is not supported (supported: "
                                                   "TemplateProcessing, BertProcessing, null)"));
  }
  const Json& single = post.value("single", Json());
  const Json& specials = post.value("special_tokens", Json::object());
  if (!single.is_array())
    return absl::DataLossError(absl::StrCat(label, ": post_processor.single must be a list"));
  bool seen_sequence = false;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const std::string name = item.value("SpecialToken", Json::object()).value("id", "");
    std::vector<int32_t> ids;
    if (specials.contains(name) && specials[name].contains("ids")) {
      for (const Json& id : specials[name]["ids"]) ids.push_back(id.get<int32_t>());
    } else {
      ASSIGN_OR_RETURN(int32_t id, IdOf(vocab, name, label + ": post_processor"));
      ids.push_back(id);
    }
    auto& target = seen_sequence ? config->suffix_ids : config->prefix_ids;
    target.insert(target.end(), ids.begin(), ids.end());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerJson(const fs::path& path) {
  const std::string label = path.string();
  ASSIGN_OR_RETURN(Json json, ReadJson(path));
  const Json& model = json.value("model", Json::object());
  const std::string model_type = model.value("type", "");
  if (model_type != "WordPiece") {
    return absl::InvalidArgumentError(absl::StrCat(label, ": tokenizer model '", model_type,
                                                   "' is not supported (supported: WordPiece)"));
  }
  const Json& pre = json.value("pre_tokenizer", Json());
  if (pre.is_null() || pre.value("type", "") != "BertPreTokenizer") {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": pre_tokenizer must be BertPreTokenizer for a WordPiece model"));
  }
  TokenizerConfig config;
  RETURN_IF_ERROR(ParseNormalizer(label, json.value("normalizer", Json()), &config));
  config.unk_token = model.value("unk_token", config.unk_token);
  config.continuing_subword_prefix =
      model.value("continuing_subword_prefix", config.continuing_subword_prefix);
  config.max_input_chars_per_word =
      model.value("max_input_chars_per_word", config.max_input_chars_per_word);

  Vocab vocab;
  const Json& vocab_json = model.value("vocab", Json());
  if (!vocab_json.is_object() || vocab_json.empty())
    return absl::DataLossError(absl::StrCat(label, ": model.vocab must be a non-empty object"));
  for (const auto& [token, id] : vocab_json.items()) {
    if (!id.is_number_integer())
      return absl::DataLossError(absl::StrCat(label, ": model.vocab['", token, "'] is not an id"));
    vocab[token] = id.get<int32_t>();
  }
  for (const Json& added : json.value("added_tokens", Json::array())) {
    if (added.contains("content") && added.contains("id"))
      config.added_tokens.emplace_back(added["content"].get<std::string>(),
                                       added["id"].get<int32_t>());
  }
  RETURN_IF_ERROR(ParsePostProcessor(label, json.value("post_processor", Json()), vocab, &config));
  const Json& padding = json.value("padding", Json());
  if (padding.is_object() && padding.contains("pad_id")) {
    config.pad_id = padding["pad_id"].get<int32_t>();
  } else if (auto it = vocab.find("[PAD]"); it != vocab.end()) {
    config.pad_id = it->second;
  }
  return Tokenizer::Create(std::move(config), std::move(vocab));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadVocabTxt(const fs::path& dir) {
  const fs::path vocab_path = dir / "vocab.txt";
  std::ifstream in(vocab_path);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat(dir.string(), ": neither tokenizer.json nor vocab.txt exists"));
  Vocab vocab;
  std::string line;
  int32_t id = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    vocab.emplace(line, id++);
  }
  Json settings = Json::object();
  if (fs::exists(dir / "tokenizer_config.json")) {
    ASSIGN_OR_RETURN(settings, ReadJson(dir / "tokenizer_config.json"));
  }
  TokenizerConfig config;
  config.lowercase = BoolOr(settings, "do_lower_case", true);
  config.strip_accents = BoolOr(settings, "strip_accents", config.lowercase);
  config.handle_chinese_chars = BoolOr(settings, "tokenize_chinese_chars", true);
  config.unk_token = TokenOr(settings, "unk_token", "[UNK]");
  const std::string label = vocab_path.string();
  ASSIGN_OR_RETURN(int32_t cls, IdOf(vocab, TokenOr(settings, "cls_token", "[CLS]"), label));
  ASSIGN_OR_RETURN(int32_t sep, IdOf(vocab, TokenOr(settings, "sep_token", "[SEP]"), label));
  config.prefix_ids = {cls};
  config.suffix_ids = {sep};
  for (const char* key : {"unk_token", "cls_token", "sep_token", "pad_token", "mask_token"}) {
    const std::string token = TokenOr(settings, key, "");
    if (auto it = vocab.find(token); !token.empty() && it != vocab.end())
      config.added_tokens.emplace_back(token, it->second);
  }
  if (auto it = vocab.find(TokenOr(settings, "pad_token", "[PAD]")); it != vocab.end())
    config.pad_id = it->second;
  return Tokenizer::Create(std::move(config), std::move(vocab));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& model_dir) {
  const fs::path json_path = fs::path(model_dir) / "tokenizer.json";
  // nlohmann throws on a field of the wrong type; a bad file is an error, never a crash.
  try {
    if (fs::exists(json_path)) return LoadTokenizerJson(json_path);
    return LoadVocabTxt(model_dir);
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(model_dir, ": malformed tokenizer file: ", e.what()));
  }
}

}  // namespace embedding::model_store
