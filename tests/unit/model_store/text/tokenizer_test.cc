// The WordPiece tokenizer against Hugging Face's own implementation (fixtures produced by
// tests/data/tokenizer/generate_fixtures.js), plus the inputs no fixture can carry.
#include "model_store/text/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>

#include "model_store/text/unicode_text.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

std::unique_ptr<Tokenizer> LoadVariant(const Json& overrides, const std::string& name) {
  Json json = Json::parse(testing::ReadFile(testing::TinyModelDir() + "/tokenizer.json"));
  for (const auto& [key, value] : overrides.items()) json["normalizer"][key] = value;
  const std::string dir = testing::MakeScratchDir(name);
  testing::WriteFile(dir + "/tokenizer.json", json.dump());
  auto tokenizer = Tokenizer::Load(dir);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

Json Fixtures() {
  return Json::parse(testing::ReadFile(std::string(EMB_SOURCE_DIR) +
                                       "/tests/data/tokenizer/tokenizer_fixtures.json"));
}

TEST(Tokenizer, MatchesHuggingFaceIdsAndCodePointOffsets) {
  const Json fixtures = Fixtures();
  std::map<std::string, std::unique_ptr<Tokenizer>> variants;
  for (const auto& [name, overrides] : fixtures["variants"].items())
    variants[name] = LoadVariant(overrides, name);
  int checked = 0;
  for (const Json& c : fixtures["cases"]) {
    const std::string text = c["text"];
    const Tokenizer* tokenizer = variants.at(c["variant"]).get();
    ASSERT_NE(tokenizer, nullptr);
    auto tokens = tokenizer->Tokenize(text);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    const auto expected_ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokens->ids, expected_ids) << c["variant"] << ": " << text;
    CodePointIndex index(text);
    std::vector<std::vector<uint32_t>> offsets;
    for (const auto& span : tokens->spans)
      offsets.push_back({index.CharsBefore(span.begin), index.CharsBefore(span.end)});
    EXPECT_EQ(offsets, c["offsets"].get<std::vector<std::vector<uint32_t>>>())
        << c["variant"] << ": " << text;
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

TEST(Tokenizer, VocabTxtFallbackMatchesTokenizerJson) {
  const std::string dir = testing::MakeScratchDir("vocab_txt");
  Json json = Json::parse(testing::ReadFile(testing::TinyModelDir() + "/tokenizer.json"));
  std::vector<std::string> by_id(json["model"]["vocab"].size());
  for (const auto& [token, id] : json["model"]["vocab"].items()) by_id[id.get<int>()] = token;
  std::string vocab;
  for (const auto& token : by_id) vocab += token + "\n";
  testing::WriteFile(dir + "/vocab.txt", vocab);
  testing::WriteFile(dir + "/tokenizer_config.json",
                     testing::ReadFile(testing::TinyModelDir() + "/tokenizer_config.json"));
  auto from_txt = Tokenizer::Load(dir);
  auto from_json = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(from_txt.ok()) << from_txt.status();
  ASSERT_TRUE(from_json.ok());
  // Named: a range-for over Fixtures()["cases"] would outlive its temporary (ASan found it).
  const Json fixtures = Fixtures();
  for (const Json& c : fixtures["cases"]) {
    if (c["variant"] != "uncased") continue;
    auto a = (*from_txt)->Tokenize(c["text"].get<std::string>());
    auto b = (*from_json)->Tokenize(c["text"].get<std::string>());
    EXPECT_EQ(a->ids, b->ids) << c["text"];
  }
  EXPECT_EQ((*from_txt)->AddSpecialTokens({7}), (*from_json)->AddSpecialTokens({7}));
}

TEST(Tokenizer, TemplateAddsClsAndSep) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  const auto& t = **tokenizer;
  EXPECT_EQ(t.num_special_tokens(), 2);
  const auto wrapped = t.AddSpecialTokens({});
  ASSERT_EQ(wrapped.size(), 2u);
  EXPECT_EQ(t.IdToToken(wrapped[0]), "[CLS]");
  EXPECT_EQ(t.IdToToken(wrapped[1]), "[SEP]");
}

TEST(Tokenizer, InvalidUtf8IsAnErrorNamingTheFieldAndByte) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  for (const std::string& bad : {std::string("ok \xC3"), std::string("\xFF\xFE"),
                                 std::string("a\xED\xA0\x80z"),  // an encoded surrogate
                                 std::string("\xC0\xAF")}) {     // overlong '/'
    auto tokens = (*tokenizer)->Tokenize(bad, "inputs[3]");
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tokens.status().message(), HasSubstr("inputs[3]"));
    EXPECT_THAT(tokens.status().message(), HasSubstr("invalid UTF-8 at byte"));
  }
}

// Tokenizes "see " + a 10 MB word + " end" with the tokenizer of `dir`; the seconds it took.
double TimeTenMegabyteWord(const std::string& dir, TokenizedText* tokens) {
  auto tokenizer = Tokenizer::Load(dir);
  EXPECT_TRUE(tokenizer.ok());
  const std::string word(10 << 20, 'q');
  const auto start = std::chrono::steady_clock::now();
  auto result = (*tokenizer)->Tokenize("see " + word + " end");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.ok());
  if (result.ok()) *tokens = *std::move(result);
  return seconds;
}

TEST(Tokenizer, TenMegabyteWordIsOneUnknownTokenInLinearTime) {
  TokenizedText tokens;
  const double seconds = TimeTenMegabyteWord(testing::TinyModelDir(), &tokens);
  ASSERT_EQ(tokens.ids.size(), 3u);
  EXPECT_EQ(Tokenizer::Load(testing::TinyModelDir()).value()->IdToToken(tokens.ids[1]), "[UNK]");
  EXPECT_EQ(tokens.spans[1].begin, 4u);
  EXPECT_EQ(tokens.spans[1].end, 4u + (10u << 20));
  EXPECT_LT(seconds, 30.0) << "a quadratic tokenizer would take far longer";
}

TEST(Tokenizer, SpansAlwaysPointIntoTheOriginalText) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  const std::string text = "İstanbul Cafe\xCC\x81 中文 🙂 \x01 x[SEP]y";
  auto tokens = (*tokenizer)->Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  uint32_t last_end = 0;
  for (const auto& span : tokens->spans) {
    EXPECT_LE(last_end, span.begin);
    EXPECT_LT(span.begin, span.end);
    EXPECT_LE(span.end, text.size());
    EXPECT_TRUE(ValidateUtf8(text.substr(span.begin, span.end - span.begin), "span").ok());
    last_end = span.end;
  }
}

TEST(Tokenizer, ControlOnlyAndEmptyTextGiveNoTokens) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  EXPECT_TRUE((*tokenizer)->Tokenize("")->ids.empty());
  EXPECT_TRUE((*tokenizer)->Tokenize(std::string("\x01\x02\0 \t", 5))->ids.empty());
}

TEST(Tokenizer, BadTokenizerFilesAreErrorsNotCrashes) {
  const std::string dir = testing::MakeScratchDir("bad_files");
  EXPECT_EQ(Tokenizer::Load(dir).status().code(), absl::StatusCode::kNotFound);
  testing::WriteFile(dir + "/tokenizer.json", "{\"model\": {\"type\": \"WordLevel\"}}");
  auto word_level = Tokenizer::Load(dir);
  EXPECT_EQ(word_level.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(word_level.status().message(), HasSubstr("supported: WordPiece, Unigram, BPE"));
  testing::WriteFile(dir + "/tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}");
  auto bpe = Tokenizer::Load(dir);
  EXPECT_EQ(bpe.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bpe.status().message(), HasSubstr("model.vocab must be a non-empty object"));
  testing::WriteFile(dir + "/tokenizer.json",
                     R"({"model": {"type": "WordPiece", "vocab": {"a": "x"}},
                         "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  EXPECT_EQ(Tokenizer::Load(dir).status().code(), absl::StatusCode::kDataLoss);
  testing::WriteFile(dir + "/tokenizer.json",
                     R"({"model": {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": 5},
                         "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  EXPECT_EQ(Tokenizer::Load(dir).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Tokenizer, UnigramTenMegabyteWordIsLinear) {
  TokenizedText tokens;
  const double seconds = TimeTenMegabyteWord(testing::XlmRobertaModelDir(), &tokens);
  EXPECT_GT(tokens.ids.size(), 2u);
  EXPECT_EQ(tokens.spans.back().end, 8u + (10u << 20));
  EXPECT_LT(seconds, 60.0) << "Viterbi over a word is linear in its length";
}

TEST(Tokenizer, UnigramTemplateAddsSAndEndS) {
  auto tokenizer = Tokenizer::Load(testing::XlmRobertaModelDir());
  ASSERT_TRUE(tokenizer.ok());
  const auto ids = (*tokenizer)->AddSpecialTokens((*tokenizer)->Tokenize("hello")->ids);
  EXPECT_EQ((*tokenizer)->IdToToken(ids.front()), "<s>");
  EXPECT_EQ((*tokenizer)->IdToToken(ids.back()), "</s>");
  EXPECT_EQ((*tokenizer)->config().pad_id, 1);
}

// The " {2,}" collapse converted XLM-R checkpoints carry, on a megabyte of spaces: linear and
// without recursion (std::regex overflowed its stack at 100,000).
TEST(Tokenizer, ReplacePatternOnAMegabyteOfSpaces) {
  Json json = Json::parse(testing::ReadFile(testing::XlmRobertaModelDir() + "/tokenizer.json"));
  json["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "NFKC"}},
        {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  const std::string dir = testing::MakeScratchDir("replace_spaces");
  testing::WriteFile(dir + "/tokenizer.json", json.dump());
  auto tokenizer = Tokenizer::Load(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto wide = (*tokenizer)->Tokenize("river" + std::string(1 << 20, ' ') + "stone");
  auto narrow = (*tokenizer)->Tokenize("river stone");
  ASSERT_TRUE(wide.ok() && narrow.ok());
  EXPECT_EQ(wide->ids, narrow->ids);
  // The collapsed space takes the span of the run's last space, as Hugging Face aligns it.
  const uint32_t last_space = 5u + (1u << 20) - 1;
  EXPECT_TRUE(std::any_of(wide->spans.begin(), wide->spans.end(),
                          [&](const TextSpan& span) { return span.begin == last_space; }));
}

// Ids of 2^31 and more once wrapped silently (2^40 became 0, [PAD]); a huge id must not size
// the id table either.
TEST(Tokenizer, OutOfRangeIdsAreRefusedNamingTheToken) {
  const Json base = Json::parse(testing::ReadFile(testing::TinyModelDir() + "/tokenizer.json"));
  const std::string dir = testing::MakeScratchDir("huge_ids");
  for (const auto& [where, edit] : std::vector<std::pair<std::string, std::function<void(Json&)>>>{
           {"model.vocab['the']", [](Json& j) { j["model"]["vocab"]["the"] = 1LL << 40; }},
           {"model.vocab['the']", [](Json& j) { j["model"]["vocab"]["the"] = -3; }},
           {"added_tokens['[SEP]']", [](Json& j) { j["added_tokens"][3]["id"] = 1LL << 32; }},
           {"far beyond", [](Json& j) { j["model"]["vocab"]["the"] = 2000000000; }}}) {
    Json json = base;
    edit(json);
    testing::WriteFile(dir + "/tokenizer.json", json.dump());
    auto tokenizer = Tokenizer::Load(dir);
    EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kDataLoss) << where;
    EXPECT_THAT(tokenizer.status().message(), HasSubstr(where));
  }
}

// The tokenizer.json fuzz target's finding: max_input_chars_per_word = 1e26 (a float) was
// converted to int, undefined behaviour. Now every non-integer or out-of-range value is
// DATA_LOSS naming the field (the crashing input is also a seed of the fuzz target).
TEST(Tokenizer, MaxInputCharsPerWordMustBeAnIntegerInRange) {
  const Json base = Json::parse(testing::ReadFile(testing::TinyModelDir() + "/tokenizer.json"));
  for (const Json& bad :
       {Json(1.00111e26), Json(2.5), Json(0), Json(-1), Json(1LL << 40), Json("100")}) {
    Json json = base;
    json["model"]["max_input_chars_per_word"] = bad;
    auto tokenizer = Tokenizer::FromJson("tokenizer.json", json.dump());
    EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(tokenizer.status().message(),
                HasSubstr("model.max_input_chars_per_word must be an integer in [1, 2147483647]"));
  }
  Json fine = base;
  fine["model"]["max_input_chars_per_word"] = 7;
  EXPECT_TRUE(Tokenizer::FromJson("tokenizer.json", fine.dump()).ok());
}

// Each broken Unigram-side component is an error naming it, never a crash.
TEST(Tokenizer, BadUnigramFilesNameTheComponent) {
  const Json base =
      Json::parse(testing::ReadFile(testing::XlmRobertaModelDir() + "/tokenizer.json"));
  const std::string dir = testing::MakeScratchDir("bad_unigram");
  auto load = [&](const std::function<void(Json&)>& edit) {
    Json json = base;
    edit(json);
    testing::WriteFile(dir + "/tokenizer.json", json.dump());
    return Tokenizer::Load(dir).status();
  };
  auto expect = [](const absl::Status& status, absl::StatusCode code, const std::string& word) {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(status.message(), HasSubstr(word));
  };
  expect(load([](Json& j) { j["model"]["vocab"] = Json::object(); }), absl::StatusCode::kDataLoss,
         "model.vocab");
  expect(load([](Json& j) { j["model"]["vocab"][7] = Json::array({"x"}); }),
         absl::StatusCode::kDataLoss, "model.vocab[7]");
  expect(load([](Json& j) { j["model"]["unk_id"] = 1 << 30; }), absl::StatusCode::kDataLoss,
         "unk_id");
  expect(load([](Json& j) {
           j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "***"}};
         }),
         absl::StatusCode::kDataLoss, "precompiled_charsmap");
  expect(load([](Json& j) {
           j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAQAA=="}};
         }),
         absl::StatusCode::kDataLoss, "precompiled_charsmap");
  expect(load([](Json& j) {
           j["normalizer"] = {{"type", "Nmt"}};
         }),
         absl::StatusCode::kInvalidArgument, "supported: BertNormalizer");
  expect(load([](Json& j) { j["pre_tokenizer"]["prepend_scheme"] = "sometimes"; }),
         absl::StatusCode::kDataLoss, "prepend_scheme");
  expect(load([](Json& j) {
           j["pre_tokenizer"] = {{"type", "Digits"}};
         }),
         absl::StatusCode::kInvalidArgument, "supported: BertPreTokenizer");
  expect(load([](Json& j) {
           j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "("}}}, {"content", ""}};
         }),
         absl::StatusCode::kInvalidArgument, "Replace pattern");
}

}  // namespace
}  // namespace embedding::model_store
