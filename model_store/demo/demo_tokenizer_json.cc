#include "model_store/demo/demo_tokenizer_json.h"

#include <cstdio>

#include "model_store/text/pre_tokenizer.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

Json AddedToken(int id, const std::string& content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// TemplateProcessing: `cls` $A `sep` for one sequence; for a pair BERT's `cls` $A `sep` $B:1
// `sep`:1, or (with `<s>` as cls: XLM-R, CamemBERT, MPNet) `cls` $A `sep` `sep` $B `sep`, all
// typed 0, as their Hub tokenizer.json files have it.
Json Template(const std::string& cls, int cls_id, const std::string& sep, int sep_id) {
  auto special = [](const std::string& name, int type) {
    return Json{{"SpecialToken", {{"id", name}, {"type_id", type}}}};
  };
  auto sequence = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  return {{"type", "TemplateProcessing"},
          {"single", {special(cls, 0), sequence("A", 0), special(sep, 0)}},
          {"pair", cls == "<s>" ? Json{special(cls, 0), sequence("A", 0), special(sep, 0),
                                       special(sep, 0), sequence("B", 0), special(sep, 0)}
                                : Json{special(cls, 0), sequence("A", 0), special(sep, 0),
                                       sequence("B", 1), special(sep, 1)}},
          {"special_tokens",
           {{cls, {{"id", cls}, {"ids", {cls_id}}, {"tokens", {cls}}}},
            {sep, {{"id", sep}, {"ids", {sep_id}}, {"tokens", {sep}}}}}}};
}

// GPT-2's 256 byte characters, then each word of `words` (after a space: "Ġword") built by
// merges of its prefixes, numbered after what `vocab` holds, until `vocab_size` tokens.
// Returns the next free id.
int AddByteLevelPieces(const std::vector<std::string>& words, int64_t vocab_size, Json* vocab,
                       Json* merges) {
  const std::array<char32_t, 256> bytes = ByteCharacters();
  int64_t next = static_cast<int64_t>(vocab->size());
  auto add = [&](const std::string& piece) { (*vocab)[piece] = next++; };
  for (int b = 0; b < 256; ++b) {
    std::string c;
    AppendUtf8(bytes[b], &c);
    add(c);
  }
  for (const std::string& word : words) {
    std::vector<std::string> symbols;
    for (unsigned char b : " " + word) {
      symbols.emplace_back();
      AppendUtf8(bytes[b], &symbols.back());
    }
    std::string prefix = symbols[0];
    for (size_t i = 1; i < symbols.size() && next < vocab_size; ++i) {
      const std::string merged = prefix + symbols[i];
      if (!vocab->contains(merged)) {
        merges->push_back(Json::array({prefix, symbols[i]}));
        add(merged);
      }
      prefix = merged;
    }
  }
  return static_cast<int>(next);
}

Json BpeModel(const Json& vocab, const Json& merges) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merges}};
}

}  // namespace

Json WordPieceTokenizerJson(const std::vector<std::string>& vocab, const std::string& cls,
                            const std::string& sep) {
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
          {"post_processor",
           Template(cls, vocab_map.at(cls).get<int>(), sep, vocab_map.at(sep).get<int>())},
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

Json ByteLevelBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size) {
  Json vocab = Json::object();
  Json merges = Json::array();
  const int eos = AddByteLevelPieces(words, vocab_size, &vocab, &merges);
  const char* kEos = "<|endoftext|>";
  // Qwen2's pre-tokenizer pattern (contractions, letters, single digits, punctuation runs,
  // newlines, spaces).
  const char* kPattern =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const Json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", false}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", {AddedToken(eos, kEos)}},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", kPattern}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byte_level}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", kEos}, {"type_id", 0}}}}}},
            {"pair",
             {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", kEos}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
              {{"SpecialToken", {{"id", kEos}, {"type_id", 1}}}}}},
            {"special_tokens", {{kEos, {{"id", kEos}, {"ids", {eos}}, {"tokens", {kEos}}}}}}}},
          {"decoder", byte_level},
          {"model", BpeModel(vocab, merges)}};
}

Json T5UnigramTokenizerJson(const std::vector<std::pair<std::string, double>>& pieces) {
  std::vector<std::pair<std::string, double>> t5 = {{"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
  t5.insert(t5.end(), pieces.begin() + 4, pieces.end() - 1);
  // XLM-R's layout (NFKC, Metaspace), with T5's specials, template and unknown id.
  Json tokenizer = UnigramTokenizerJson(t5);
  tokenizer["added_tokens"] =
      Json::array({AddedToken(0, "<pad>"), AddedToken(1, "</s>"), AddedToken(2, "<unk>")});
  auto sequence = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  auto eos = [](int type) { return Json{{"SpecialToken", {{"id", "</s>"}, {"type_id", type}}}}; };
  tokenizer["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {sequence("A", 0), eos(0)}},
      {"pair", {sequence("A", 0), eos(0), sequence("B", 1), eos(1)}},
      {"special_tokens", {{"</s>", {{"id", "</s>"}, {"ids", {1}}, {"tokens", {"</s>"}}}}}}};
  tokenizer["model"]["unk_id"] = 2;
  tokenizer["model"]["byte_fallback"] = false;
  return tokenizer;
}

Json GemmaBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size) {
  const char* kSpecials[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
  Json vocab = Json::object(), merges = Json::array(), added = Json::array();
  int next = 0;
  for (const char* special : kSpecials) {
    added.push_back(AddedToken(next, special));
    vocab[special] = next++;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = next++;
  }
  const std::string space = "\u2581";
  auto symbols_of = [](const std::string& text) {  // UTF-8 characters
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size();) {
      size_t n = 1;
      const auto lead = static_cast<unsigned char>(text[i]);
      if (lead >= 0xF0)
        n = 4;
      else if (lead >= 0xE0)
        n = 3;
      else if (lead >= 0xC0)
        n = 2;
      out.push_back(text.substr(i, n));
      i += n;
    }
    return out;
  };
  for (const std::string& word : words) {
    const std::vector<std::string> symbols = symbols_of(space + word);
    for (const std::string& symbol : symbols) {
      if (!vocab.contains(symbol) && next < vocab_size) vocab[symbol] = next++;
    }
    std::string prefix = symbols[0];
    for (size_t i = 1; i < symbols.size() && next < vocab_size; ++i) {
      const std::string merged = prefix + symbols[i];
      if (!vocab.contains(merged) && vocab.contains(symbols[i])) {
        merges.push_back(Json::array({prefix, symbols[i]}));
        vocab[merged] = next++;
      }
      prefix = merged;
    }
  }
  auto special = [](const char* name) {
    return Json{{"SpecialToken", {{"id", name}, {"type_id", 0}}}};
  };
  Json model = BpeModel(vocab, merges);
  model["unk_token"] = "<unk>";
  model["fuse_unk"] = true;
  model["byte_fallback"] = true;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}}},
          {"pre_tokenizer", nullptr},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {special("<bos>"), {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, special("<eos>")}},
            {"pair",
             {special("<bos>"),
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              special("<eos>"),
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
              special("<eos>")}},
            {"special_tokens",
             {{"<bos>", {{"id", "<bos>"}, {"ids", {2}}, {"tokens", {"<bos>"}}}},
              {"<eos>", {{"id", "<eos>"}, {"ids", {1}}, {"tokens", {"<eos>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}}}}}},
          {"model", model}};
}

Json ChatBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size) {
  const char* kChatTokens[] = {"<|im_start|>", "<|im_end|>", "<think>", "</think>"};
  const std::pair<const char*, const char*> kAnswerMerges[] = {{"y", "e"}, {"ye", "s"}, {"n", "o"}};
  Json tokenizer = ByteLevelBpeTokenizerJson(words, vocab_size - 8);
  Json& vocab = tokenizer["model"]["vocab"];
  int next = static_cast<int>(vocab.size()) + 1;  // after <|endoftext|>, which is not in vocab
  for (const auto& [left, right] : kAnswerMerges) {
    const std::string merged = std::string(left) + right;
    if (vocab.contains(merged)) continue;
    tokenizer["model"]["merges"].push_back(Json::array({left, right}));
    vocab[merged] = next++;
  }
  for (const char* token : kChatTokens) {
    vocab[token] = next;
    tokenizer["added_tokens"].push_back(AddedToken(next++, token));
  }
  tokenizer["post_processor"] = {{"type", "ByteLevel"},
                                 {"add_prefix_space", false},
                                 {"trim_offsets", false},
                                 {"use_regex", false}};
  return tokenizer;
}

Json RobertaBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size) {
  Json vocab = Json::object();
  const char* kSpecials[] = {"<s>", "<pad>", "</s>", "<unk>"};
  Json added = Json::array();
  for (int i = 0; i < 4; ++i) {
    vocab[kSpecials[i]] = i;
    added.push_back(AddedToken(i, kSpecials[i]));
  }
  Json merges = Json::array();
  const int mask = AddByteLevelPieces(words, vocab_size - 1, &vocab, &merges);
  vocab["<mask>"] = mask;
  added.push_back(AddedToken(mask, "<mask>"));
  const Json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor",
           {{"type", "RobertaProcessing"},
            {"sep", {"</s>", 2}},
            {"cls", {"<s>", 0}},
            {"trim_offsets", true},
            {"add_prefix_space", false}}},
          {"decoder", byte_level},
          {"model", BpeModel(vocab, merges)}};
}

}  // namespace embedding::model_store
