// Tokenizer::Load: reads the Hugging Face tokenizer files into a TokenizerConfig + vocabulary.
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;
using Vocab = std::unordered_map<std::string, int32_t>;

absl::StatusOr<Json> ParseJsonObject(const std::string& label, std::string_view text) {
  Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(label, ": not a well-formed JSON object"));
  return json;
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<Json> ReadJson(const fs::path& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJsonObject(path.string(), text);
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

// A token id from the file: an integer in [0, 2^31 - 1). Larger ids once wrapped silently
// (2^40 became 0, [PAD]); DATA_LOSS naming `where` instead.
absl::StatusOr<int32_t> ReadId(const Json& value, const std::string& where) {
  constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max() - 1;
  if (value.is_number_unsigned() && value.get<uint64_t>() <= static_cast<uint64_t>(kMaxId))
    return static_cast<int32_t>(value.get<uint64_t>());
  if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= kMaxId)
    return static_cast<int32_t>(value.get<int64_t>());
  return absl::DataLossError(
      absl::StrCat(where, ": id ", value.dump(), " is not an integer in [0, ", kMaxId, "]"));
}

absl::StatusOr<int32_t> IdOf(const Vocab& vocab, const std::string& token,
                             const std::string& where) {
  auto it = vocab.find(token);
  if (it == vocab.end())
    return absl::DataLossError(absl::StrCat(where, ": token '", token, "' is not in the vocab"));
  return it->second;
}

// TemplateProcessing's `key` list ("single" or "pair"): special tokens by their
// special_tokens entry (or vocabulary id) and the sequences A and B, each with its type_id.
absl::StatusOr<std::vector<PairTemplatePiece>> ParseTemplate(const std::string& label,
                                                             const std::string& key,
                                                             const Json& post,
                                                             const Json& specials,
                                                             const Vocab& vocab) {
  const Json& items = post.value(key, Json());
  const std::string where = absl::StrCat(label, ": post_processor.", key);
  if (!items.is_array()) return absl::DataLossError(absl::StrCat(where, " must be a list"));
  std::vector<PairTemplatePiece> pieces;
  for (const Json& item : items) {
    PairTemplatePiece piece;
    const bool sequence = item.is_object() && item.contains("Sequence");
    const Json entry = sequence ? item["Sequence"]
                       : item.is_object() ? item.value("SpecialToken", Json::object())
                                          : Json::object();
    const Json& type_id = entry.value("type_id", Json(0));
    if (!type_id.is_number_integer() || type_id.get<int64_t>() < 0 ||
        type_id.get<int64_t>() > 255) {
      return absl::DataLossError(absl::StrCat(where, ": type_id ", type_id.dump(),
                                              " is not an integer in [0, 255]"));
    }
    piece.type_id = static_cast<int32_t>(type_id.get<int64_t>());
    const std::string name = entry.value("id", "");
    if (sequence) {
      if (name != "A" && name != "B")
        return absl::DataLossError(absl::StrCat(where, ": Sequence id '", name, "' is not A or B"));
      piece.kind = name == "A" ? PairTemplatePiece::kFirst : PairTemplatePiece::kSecond;
    } else if (specials.contains(name) && specials[name].contains("ids")) {
      for (const Json& id : specials[name]["ids"]) {
        ASSIGN_OR_RETURN(int32_t value, ReadId(id, absl::StrCat(label, ": post_processor.",
                                                                "special_tokens['", name, "']")));
        piece.ids.push_back(value);
      }
    } else {
      ASSIGN_OR_RETURN(int32_t id, IdOf(vocab, name, label + ": post_processor"));
      piece.ids.push_back(id);
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

// BERT's pair: [CLS] A [SEP] B [SEP], the second part typed 1 (BertProcessing, vocab.txt).
// RoBERTa's: <s> A </s></s> B </s>, every token typed 0 (RobertaProcessing).
std::vector<PairTemplatePiece> ClassicPair(int32_t cls, int32_t sep, bool roberta) {
  using Piece = PairTemplatePiece;
  const int32_t second = roberta ? 0 : 1;
  std::vector<Piece> pair = {{Piece::kSpecial, {cls}, 0}, {Piece::kFirst, {}, 0},
                             {Piece::kSpecial, {sep}, 0}};
  if (roberta) pair.push_back({Piece::kSpecial, {sep}, 0});
  pair.push_back({Piece::kSecond, {}, second});
  pair.push_back({Piece::kSpecial, {sep}, second});
  return pair;
}

// TemplateProcessing ("single" list), BertProcessing/RobertaProcessing ("cls"/"sep" pairs),
// ByteLevel (offsets only) or a Sequence of these; null adds nothing.
// What Hugging Face's tokenizer does with a pair when the post-processor adds nothing: the
// two sequences back to back, the second typed 1.
std::vector<PairTemplatePiece> ConcatenatedPair() {
  return {{PairTemplatePiece::kFirst, {}, 0}, {PairTemplatePiece::kSecond, {}, 1}};
}

absl::Status ParsePostProcessor(const std::string& label, const Json& post, const Vocab& vocab,
                                TokenizerConfig* config) {
  if (post.is_null()) {
    config->pair = ConcatenatedPair();
    return absl::OkStatus();
  }
  const std::string type = post.value("type", "");
  if (type == "Sequence") {
    const Json& steps = post.value("processors", Json());
    if (!steps.is_array())
      return absl::DataLossError(absl::StrCat(label, ": post_processor.processors must be a list"));
    for (const Json& step : steps) RETURN_IF_ERROR(ParsePostProcessor(label, step, vocab, config));
    return absl::OkStatus();
  }
  if (type == "ByteLevel" || type == "RobertaProcessing") {
    config->trim_offsets = post.value("trim_offsets", true);
    config->add_prefix_space = post.value("add_prefix_space", true);
    if (type == "ByteLevel") {
      if (config->pair.empty()) config->pair = ConcatenatedPair();
      return absl::OkStatus();
    }
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const Json& pair = post.value(key, Json());
      if (!pair.is_array() || pair.size() != 2)
        return absl::DataLossError(
            absl::StrCat(label, ": post_processor.", key, " must be [token, id]"));
      ASSIGN_OR_RETURN(int32_t id, ReadId(pair[1], absl::StrCat(label, ": post_processor.", key)));
      (std::string(key) == "cls" ? config->prefix_ids : config->suffix_ids).push_back(id);
    }
    config->pair = ClassicPair(config->prefix_ids.back(), config->suffix_ids.back(),
                               type == "RobertaProcessing");
    return absl::OkStatus();
  }
  if (type != "TemplateProcessing") {
    return absl::InvalidArgumentError(absl::StrCat(label, ": post_processor type '", type,
                                                   "' is not supported (supported: "
                                                   "TemplateProcessing, BertProcessing, "
                                                   "RobertaProcessing, ByteLevel, Sequence, "
                                                   "null)"));
  }
  const Json& specials = post.value("special_tokens", Json::object());
  ASSIGN_OR_RETURN(std::vector<PairTemplatePiece> single,
                   ParseTemplate(label, "single", post, specials, vocab));
  bool seen_sequence = false;
  for (const PairTemplatePiece& piece : single) {
    if (piece.kind != PairTemplatePiece::kSpecial) {
      seen_sequence = true;
      continue;
    }
    auto& target = seen_sequence ? config->suffix_ids : config->prefix_ids;
    target.insert(target.end(), piece.ids.begin(), piece.ids.end());
  }
  if (post.contains("pair")) {
    ASSIGN_OR_RETURN(config->pair, ParseTemplate(label, "pair", post, specials, vocab));
  }
  return absl::OkStatus();
}

// WordPiece's and BPE's "vocab": {token: id}, into parts->vocab.
absl::Status ReadVocabObject(const std::string& label, const Json& model, TokenizerParts* parts) {
  const Json& vocab_json = model.value("vocab", Json());
  if (!vocab_json.is_object() || vocab_json.empty())
    return absl::DataLossError(absl::StrCat(label, ": model.vocab must be a non-empty object"));
  for (const auto& [token, id] : vocab_json.items()) {
    ASSIGN_OR_RETURN(parts->vocab[token],
                     ReadId(id, absl::StrCat(label, ": model.vocab['", token, "']")));
  }
  return absl::OkStatus();
}

// WordPiece: {"vocab": {token: id}, "unk_token", "continuing_subword_prefix", ...}.
absl::Status ParseWordPiece(const std::string& label, const Json& model, TokenizerParts* parts) {
  RETURN_IF_ERROR(ReadVocabObject(label, model, parts));
  WordPieceOptions options;
  ASSIGN_OR_RETURN(options.unk_id,
                   IdOf(parts->vocab, model.value("unk_token", "[UNK]"), label + ": model"));
  options.continuing_subword_prefix =
      model.value("continuing_subword_prefix", options.continuing_subword_prefix);
  // Checked as an integer first: a float such as 1e26 converted to int is undefined
  // behaviour (the tokenizer.json fuzz target found it).
  if (auto it = model.find("max_input_chars_per_word"); it != model.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
        it->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return absl::DataLossError(absl::StrCat(
          label, ": model.max_input_chars_per_word must be an integer in [1, 2147483647]"));
    }
    options.max_input_chars_per_word = static_cast<int>(it->get<int64_t>());
  }
  parts->config.unk_id = options.unk_id;
  parts->model = MakeWordPiece(parts->vocab, std::move(options));
  return absl::OkStatus();
}

// Unigram: {"vocab": [[piece, score], ...], "unk_id", "byte_fallback"}; a piece's id is its index.
absl::Status ParseUnigram(const std::string& label, const Json& model, TokenizerParts* parts) {
  const Json& vocab_json = model.value("vocab", Json());
  if (!vocab_json.is_array() || vocab_json.empty())
    return absl::DataLossError(absl::StrCat(label, ": model.vocab must be a non-empty list"));
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(vocab_json.size());
  for (const Json& entry : vocab_json) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
      return absl::DataLossError(
          absl::StrCat(label, ": model.vocab[", pieces.size(), "] must be [piece, score]"));
    pieces.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
    parts->vocab.emplace(pieces.back().first, static_cast<int32_t>(pieces.size() - 1));
  }
  UnigramOptions options;
  ASSIGN_OR_RETURN(options.unk_id,
                   ReadId(model.value("unk_id", Json()), absl::StrCat(label, ": model.unk_id")));
  options.byte_fallback = model.value("byte_fallback", false);
  parts->config.unk_id = options.unk_id;
  auto unigram = MakeUnigram(std::move(pieces), options);
  if (!unigram.ok())
    return absl::DataLossError(absl::StrCat(label, ": ", unigram.status().message()));
  parts->model = std::move(*unigram);
  return absl::OkStatus();
}

// BPE: {"vocab": {token: id}, "merges": ["a b", ...] or [["a", "b"], ...], "unk_token",
// "fuse_unk", "byte_fallback", "ignore_merges", "continuing_subword_prefix",
// "end_of_word_suffix", "dropout"}.
absl::Status ParseBpe(const std::string& label, const Json& model, TokenizerParts* parts) {
  RETURN_IF_ERROR(ReadVocabObject(label, model, parts));
  const Json& merges_json = model.value("merges", Json::array());
  if (!merges_json.is_array())
    return absl::DataLossError(absl::StrCat(label, ": model.merges must be a list"));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (const Json& merge : merges_json) {
    const size_t rank = merges.size();
    if (merge.is_string()) {  // "a b": exactly one space, as the library splits it
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        return absl::DataLossError(
            absl::StrCat(label, ": model.merges[", rank, "] must be \"left right\""));
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      return absl::DataLossError(
          absl::StrCat(label, ": model.merges[", rank, "] must be \"a b\" or [\"a\", \"b\"]"));
    }
  }
  // Dropout samples merges at random: an embedding must not change between calls.
  if (auto it = model.find("dropout");
      it != model.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": model.dropout ", it->dump(),
                     " is not supported (only null or 0: an embedding "
                     "must be the same on every call)"));
  }
  BpeOptions options;
  auto string_or_empty = [&](const char* key) {
    auto it = model.find(key);
    return it != model.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (const std::string unk = string_or_empty("unk_token"); !unk.empty()) {
    ASSIGN_OR_RETURN(int32_t id, IdOf(parts->vocab, unk, label + ": model.unk_token"));
    options.unk_id = id;
    parts->config.unk_id = id;
  }
  options.fuse_unk = BoolOr(model, "fuse_unk", false);
  options.byte_fallback = BoolOr(model, "byte_fallback", false);
  options.ignore_merges = BoolOr(model, "ignore_merges", false);
  options.continuing_subword_prefix = string_or_empty("continuing_subword_prefix");
  options.end_of_word_suffix = string_or_empty("end_of_word_suffix");
  auto bpe = MakeBpe(parts->vocab, merges, std::move(options));
  if (!bpe.ok()) return absl::DataLossError(absl::StrCat(label, ": ", bpe.status().message()));
  parts->model = std::move(*bpe);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Tokenizer>> ParseTokenizerJson(const std::string& label,
                                                              std::string_view text) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(label, text));
  const Json& model = json.value("model", Json::object());
  const std::string model_type = model.value("type", "");
  TokenizerParts parts;
  if (model_type == "WordPiece") {
    RETURN_IF_ERROR(ParseWordPiece(label, model, &parts));
  } else if (model_type == "Unigram") {
    RETURN_IF_ERROR(ParseUnigram(label, model, &parts));
  } else if (model_type == "BPE") {
    RETURN_IF_ERROR(ParseBpe(label, model, &parts));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(label, ": tokenizer model '", model_type,
                                                   "' is not supported (supported: WordPiece, "
                                                   "Unigram, BPE)"));
  }
  ASSIGN_OR_RETURN(parts.normalizer, ParseNormalizer(label, json.value("normalizer", Json())));
  ASSIGN_OR_RETURN(parts.pre_tokenizer,
                   ParsePreTokenizer(label, json.value("pre_tokenizer", Json())));
  TokenizerConfig& config = parts.config;
  for (const Json& added : json.value("added_tokens", Json::array())) {
    if (!added.contains("content") || !added.contains("id")) continue;
    AddedToken token;
    token.content = added["content"].get<std::string>();
    ASSIGN_OR_RETURN(token.id, ReadId(added["id"], absl::StrCat(label, ": added_tokens['",
                                                                token.content, "']")));
    token.lstrip = BoolOr(added, "lstrip", false);
    token.rstrip = BoolOr(added, "rstrip", false);
    token.single_word = BoolOr(added, "single_word", false);
    // The library's default: special tokens are matched raw, others after normalization.
    token.normalized = BoolOr(added, "normalized", !BoolOr(added, "special", false));
    config.added_tokens.push_back(std::move(token));
  }
  RETURN_IF_ERROR(
      ParsePostProcessor(label, json.value("post_processor", Json()), parts.vocab, &config));
  const Json& padding = json.value("padding", Json());
  if (padding.is_object() && padding.contains("pad_id")) {
    ASSIGN_OR_RETURN(config.pad_id,
                     ReadId(padding["pad_id"], absl::StrCat(label, ": padding.pad_id")));
  } else {
    for (const char* pad : {"[PAD]", "<pad>"}) {
      if (auto it = parts.vocab.find(pad); it != parts.vocab.end()) {
        config.pad_id = it->second;
        break;
      }
    }
  }
  return Tokenizer::Create(std::move(parts));
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
  TokenizerParts parts;
  TokenizerConfig& config = parts.config;
  BertNormalizerOptions normalizer;
  normalizer.lowercase = BoolOr(settings, "do_lower_case", true);
  normalizer.strip_accents = BoolOr(settings, "strip_accents", normalizer.lowercase);
  normalizer.handle_chinese_chars = BoolOr(settings, "tokenize_chinese_chars", true);
  parts.normalizer = MakeBertNormalizer(normalizer);
  parts.pre_tokenizer = MakeBertPreTokenizer();
  const std::string label = vocab_path.string();
  WordPieceOptions wordpiece;
  ASSIGN_OR_RETURN(wordpiece.unk_id, IdOf(vocab, TokenOr(settings, "unk_token", "[UNK]"), label));
  config.unk_id = wordpiece.unk_id;
  ASSIGN_OR_RETURN(int32_t cls, IdOf(vocab, TokenOr(settings, "cls_token", "[CLS]"), label));
  ASSIGN_OR_RETURN(int32_t sep, IdOf(vocab, TokenOr(settings, "sep_token", "[SEP]"), label));
  config.prefix_ids = {cls};
  config.suffix_ids = {sep};
  config.pair = ClassicPair(cls, sep, /*roberta=*/false);
  for (const char* key : {"unk_token", "cls_token", "sep_token", "pad_token", "mask_token"}) {
    const std::string token = TokenOr(settings, key, "");
    if (auto it = vocab.find(token); !token.empty() && it != vocab.end())
      config.added_tokens.push_back({token, it->second});
  }
  if (auto it = vocab.find(TokenOr(settings, "pad_token", "[PAD]")); it != vocab.end())
    config.pad_id = it->second;
  parts.model = MakeWordPiece(vocab, std::move(wordpiece));
  parts.vocab = std::move(vocab);
  return Tokenizer::Create(std::move(parts));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& model_dir) {
  const fs::path json_path = fs::path(model_dir) / "tokenizer.json";
  // nlohmann throws on a field of the wrong type; a bad file is an error, never a crash.
  try {
    if (fs::exists(json_path)) {
      ASSIGN_OR_RETURN(std::string text, ReadFile(json_path));
      return FromJson(json_path.string(), text);
    }
    return LoadVocabTxt(model_dir);
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(model_dir, ": malformed tokenizer file: ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const std::string& label,
                                                               std::string_view text) {
  try {
    return ParseTokenizerJson(label, text);
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(label, ": malformed tokenizer file: ", e.what()));
  }
}

}  // namespace embedding::model_store
