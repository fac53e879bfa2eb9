// Byte-level BPE on a vocabulary small enough to follow by hand, its bad files, and the inputs
// no comparison fixture carries. Hugging Face's own library checks it on real layouts in
// tests/reference/compare_bpe_tokenizers.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_store/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// "Ġ" is the byte-level space. Merges: a+b first, then ab+c, then Ġ+abc; "b c" ranks last,
// so "abc" must merge leftmost-lowest-rank first to reach "abc".
Json SmallBpe() {
  return {
      {"added_tokens",
       {{{"id", 9},
         {"content", "<mask>"},
         {"special", true},
         {"lstrip", true},
         {"rstrip", false},
         {"single_word", false},
         {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"model",
       {{"type", "BPE"},
        {"vocab",
         {{"a", 0},
          {"b", 1},
          {"c", 2},
          {"\u0120", 3},
          {"ab", 4},
          {"abc", 5},
          {"\u0120abc", 6},
          {"bc", 7},
          {"<mask>", 9}}},
        // Pairs of strings would read as an object: arrays spelled out.
        {"merges", Json::array({Json::array({"a", "b"}), Json::array({"ab", "c"}),
                                Json::array({"\u0120", "abc"}), Json::array({"b", "c"})})}}}};
}

absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(const Json& json) {
  return Tokenizer::FromJson("tokenizer.json", json.dump());
}

TEST(BpeTokenizer, MergesByRankThenLeftmost) {
  auto tokenizer = FromJson(SmallBpe());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto tokens = (*tokenizer)->Tokenize("abc abc bc");
  ASSERT_TRUE(tokens.ok());
  // "abc" | "Ġabc" | "Ġbc": Ġ+b has no merge, so the last word stays "Ġ", "bc".
  EXPECT_THAT(tokens->ids, ElementsAre(5, 6, 3, 7));
  EXPECT_EQ(tokens->spans[1].begin, 3u);
  EXPECT_EQ(tokens->spans[1].end, 7u);
}

TEST(BpeTokenizer, BothMergeSpellingsGiveTheSameIds) {
  Json legacy = SmallBpe();
  legacy["model"]["merges"] = {"a b", "ab c", "\u0120 abc", "b c"};
  auto pairs = FromJson(SmallBpe());
  auto strings = FromJson(legacy);
  ASSERT_TRUE(pairs.ok() && strings.ok());
  EXPECT_EQ((*pairs)->Tokenize("cab abc bcab")->ids, (*strings)->Tokenize("cab abc bcab")->ids);
}

TEST(BpeTokenizer, AnLstripAddedTokenTakesTheSpacesBeforeIt) {
  auto tokenizer = FromJson(SmallBpe());
  ASSERT_TRUE(tokenizer.ok());
  auto tokens = (*tokenizer)->Tokenize("abc   <mask>");
  ASSERT_TRUE(tokens.ok());
  EXPECT_THAT(tokens->ids, ElementsAre(5, 9));
  EXPECT_EQ(tokens->spans[1].begin, 3u);  // the three spaces belong to <mask>
}

// A megabyte without a break is one regex word: the heap of merges keeps it O(n log n) where
// rescanning for the best pair would be O(n^2) (hours).
TEST(BpeTokenizer, AMegabyteWordMergesInNLogN) {
  auto tokenizer = FromJson(SmallBpe());
  ASSERT_TRUE(tokenizer.ok());
  std::string text;
  for (int i = 0; i < (1 << 20) / 3; ++i) text += "abc";
  auto tokens = (*tokenizer)->Tokenize(text);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->ids.size(), static_cast<size_t>((1 << 20) / 3));
  EXPECT_EQ(tokens->ids.front(), 5);
}

TEST(BpeTokenizer, BadFilesNameTheField) {
  struct Case {
    std::function<void(Json&)> edit;
    absl::StatusCode code;
    std::string where;
  };
  const std::vector<Case> cases = {
      {[](Json& j) {
         j["model"]["merges"][1] = Json::array({"ab", "zz"});
       },
       absl::StatusCode::kDataLoss, "model.merges[1]: 'zz' is not in model.vocab"},
      {[](Json& j) {
         j["model"]["merges"][3] = Json::array({"c", "c"});
       },
       absl::StatusCode::kDataLoss, "model.merges[3]: 'cc' is not in model.vocab"},
      {[](Json& j) { j["model"]["merges"] = Json::array({"a b c"}); }, absl::StatusCode::kDataLoss,
       "model.merges[0] must be"},
      {[](Json& j) { j["model"]["merges"] = {Json::array({"a"})}; }, absl::StatusCode::kDataLoss,
       "model.merges[0] must be"},
      {[](Json& j) { j["model"]["dropout"] = 0.1; }, absl::StatusCode::kInvalidArgument,
       "model.dropout 0.1 is not supported"},
      {[](Json& j) { j["model"]["unk_token"] = "<unk>"; }, absl::StatusCode::kDataLoss,
       "model.unk_token: token '<unk>' is not in the vocab"},
      {[](Json& j) {
         j["pre_tokenizer"] = {
             {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
       },
       absl::StatusCode::kDataLoss, "pre_tokenizer Split pattern: regex '(unclosed'"},
      {[](Json& j) {
         j["pre_tokenizer"] = {
             {"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}};
       },
       absl::StatusCode::kDataLoss, "pre_tokenizer Split behavior 'Sideways'"},
      {[](Json& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}};
       },
       absl::StatusCode::kDataLoss, "pre_tokenizer Split pattern must be"},
      {[](Json& j) {
         j["post_processor"] = {{"type", "Sequence"}, {"processors", 3}};
       },
       absl::StatusCode::kDataLoss, "post_processor.processors must be a list"},
  };
  for (const Case& c : cases) {
    Json json = SmallBpe();
    c.edit(json);
    auto tokenizer = FromJson(json);
    EXPECT_EQ(tokenizer.status().code(), c.code) << c.where;
    EXPECT_THAT(tokenizer.status().message(), HasSubstr(c.where));
  }
}

}  // namespace
}  // namespace embedding::model_store
