// TRUNCATE's window without the rest of the text: for every tokenizer kind the test models
// carry (WordPiece, Unigram, byte-level BPE, Gemma's BPE without a pre-tokenizer, Qwen's), the
// window equals the first (or last) tokens of the whole text's tokenization, ids and spans,
// on texts of many lengths and scripts; and it reads a bounded piece of a long text.
#include "model_store/text/window_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

// Words, punctuation, CJK, emoji, runs of spaces and newlines, digits: what moves a tokenizer's
// boundaries.
std::string MixedText(std::mt19937* rng, size_t words) {
  static const std::vector<std::string> kPieces = {
      "the",  "tokenizer", "embedding", "Length", "collapse", ",",     ".",   "  ",
      "\n\n", "日本語",    "の",        "文章",   "😀",       "naïve", "x=1", "(a)",
      "don't", "    ",     "1234567",   "ÉCOLE",  "\t",       "https://example.org/a?b=c"};
  std::string text;
  std::uniform_int_distribution<size_t> pick(0, kPieces.size() - 1);
  for (size_t i = 0; i < words; ++i) {
    text += kPieces[pick(*rng)];
    if ((*rng)() % 3 != 0) text += ' ';
  }
  return text;
}

TokenizedText Slice(const TokenizedText& all, size_t from, size_t to) {
  TokenizedText out;
  out.ids.assign(all.ids.begin() + from, all.ids.begin() + to);
  out.spans.assign(all.spans.begin() + from, all.spans.begin() + to);
  return out;
}

void ExpectSame(const TokenizedText& got, const TokenizedText& want, const std::string& where) {
  ASSERT_EQ(got.ids, want.ids) << where;
  for (size_t i = 0; i < got.spans.size(); ++i) {
    EXPECT_EQ(got.spans[i].begin, want.spans[i].begin) << where << " token " << i;
    EXPECT_EQ(got.spans[i].end, want.spans[i].end) << where << " token " << i;
  }
}

// Named without calling the directory function: test discovery runs before ctest writes the
// models, so a name read from the directory would be empty there.
struct TokenizerKind {
  const char* name;
  std::string (*model_dir)();
  friend void PrintTo(const TokenizerKind& kind, std::ostream* os) { *os << kind.name; }
};

class WindowTokensTest : public ::testing::TestWithParam<TokenizerKind> {};

TEST_P(WindowTokensTest, TheWindowIsTheWholeTextsFirstOrLastTokens) {
  auto tokenizer = Tokenizer::Load(GetParam().model_dir());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::mt19937 rng(7);
  for (size_t words : {0, 3, 40, 300, 2000, 9000}) {
    const std::string text = MixedText(&rng, words);
    auto all = (*tokenizer)->Tokenize(text);
    ASSERT_TRUE(all.ok());
    for (size_t window : {1, 7, 128, 510}) {
      for (bool keep_end : {false, true}) {
        const std::string where = "words " + std::to_string(words) + ", window " +
                                  std::to_string(window) + (keep_end ? ", end" : ", start");
        auto got = TokenizeWindow(**tokenizer, text, window, keep_end);
        ASSERT_TRUE(got.ok()) << got.status();
        const size_t n = all->ids.size(), kept = std::min(window, n);
        ExpectSame(got->tokens, keep_end ? Slice(*all, n - kept, n) : Slice(*all, 0, kept), where);
        EXPECT_EQ(got->cut, n > window) << where;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    TokenizerKinds, WindowTokensTest,
    ::testing::Values(TokenizerKind{"WordPiece", &testing::TinyModelDir},
                      TokenizerKind{"Unigram", &testing::XlmRobertaModelDir},
                      TokenizerKind{"ByteLevelBpe", &testing::RobertaModelDir},
                      TokenizerKind{"GemmaBpe", &testing::Gemma3ModelDir},
                      TokenizerKind{"QwenBpe", &testing::Qwen3ModelDir}),
    [](const auto& info) { return std::string(info.param.name); });

// A 2 MiB text: the window is read from a piece of it, so the cost does not follow the text.
// The piece's size is not observable from outside; its time against the whole text's is.
TEST(WindowTokens, ALongTextCostsAboutItsWindow) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  std::mt19937 rng(11);
  std::string text = MixedText(&rng, 400000);  // past 2 MiB, then cut to it
  text.resize(2 << 20);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0x80) != 0) text.pop_back();
  for (bool keep_end : {false, true}) {
    auto got = TokenizeWindow(**tokenizer, text, 510, keep_end);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->cut);
    EXPECT_EQ(got->tokens.ids.size(), 510u);
    // Its spans lie within the first (or last) 64 KiB: nothing past them was needed.
    const TextSpan& far = keep_end ? got->tokens.spans.front() : got->tokens.spans.back();
    if (keep_end) EXPECT_GT(far.begin, text.size() - (64 << 10));
    if (!keep_end) EXPECT_LT(far.end, 64u << 10);
  }
  // Invalid UTF-8 past the window is still refused, naming the field: a document is refused
  // alike whatever its strategy.
  text.back() = '\xff';
  auto bad = TokenizeWindow(**tokenizer, text, 510, false, "input[3]");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::StartsWith("input[3]: invalid UTF-8"));
}

// One word of a megabyte: the pieces never agree (its one token's span grows with them), so
// the window comes from the whole text, still one token.
TEST(WindowTokens, AWordLongerThanEveryPieceEndsAtTheWholeText) {
  auto tokenizer = Tokenizer::Load(testing::TinyModelDir());
  ASSERT_TRUE(tokenizer.ok());
  const std::string word(1 << 20, 'a');
  auto got = TokenizeWindow(**tokenizer, word, 4, false);
  ASSERT_TRUE(got.ok());
  auto all = (*tokenizer)->Tokenize(word);
  ExpectSame(got->tokens, *all, "one word");
  EXPECT_FALSE(got->cut);
}

}  // namespace
}  // namespace embedding::model_store
