#include "model_store/demo/demo_tokenizer_json.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

Json AddedToken(int id, const std::string& content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// TemplateProcessing: `cls` $A `sep` for one sequence, `cls` $A `sep` $B `sep` for a pair.
Json Template(const std::string& cls, int cls_id, const std::string& sep, int sep_id) {
  auto special = [](const std::string& name, int type) {
    return Json{{"SpecialToken", {{"id", name}, {"type_id", type}}}};
  };
  auto sequence = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  return {{"type", "TemplateProcessing"},
          {"single", {special(cls, 0), sequence("A", 0), special(sep, 0)}},
          {"pair",
           {special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1), special(sep, 1)}},
          {"special_tokens",
           {{cls, {{"id", cls}, {"ids", {cls_id}}, {"tokens", {cls}}}},
            {sep, {{"id", sep}, {"ids", {sep_id}}, {"tokens", {sep}}}}}}};
}

}  // namespace

Json WordPieceTokenizerJson(const std::vector<std::string>& vocab) {
  Json vocab_map = Json::object();
  for (size_t i = 0; i < vocab.size(); ++i) vocab_map[vocab[i]] = i;
  Json added = Json::array();
  for (int i = 0; i < 5; ++i) added.push_back(AddedToken(i, vocab[i]));
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
          {"post_processor", Template("[CLS]", 2, "[SEP]", 3)},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab_map}}}};
}

Json UnigramTokenizerJson(const std::vector<std::pair<std::string, double>>& pieces) {
  Json vocab = Json::array();
  for (const auto& [piece, score] : pieces) vocab.push_back({piece, score});
  const int mask = static_cast<int>(pieces.size()) - 1;
  Json added = Json::array();
  for (int i = 0; i < 4; ++i) added.push_back(AddedToken(i, pieces[i].first));
  added.push_back(AddedToken(mask, pieces[mask].first));
  const Json metaspace = {{"type", "Metaspace"},
                          {"replacement", "\u2581"},
                          {"prepend_scheme", "always"},
                          {"split", true}};
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFKC"}}},
      {"pre_tokenizer", metaspace},
      {"post_processor", Template("<s>", 0, "</s>", 2)},
      {"decoder", metaspace},
      {"model", {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", vocab}, {"byte_fallback", true}}}};
}

}  // namespace embedding::model_store
