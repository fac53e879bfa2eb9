// Seeded random and mutated inputs into the parsers that face untrusted bytes: the
// safetensors reader and the tokenizer. Each must answer (an error or a result), never crash
// or read out of bounds (run under ASan/valgrind to see the latter).
#include <gtest/gtest.h>

#include <random>

#include "model_store/formats/safetensors_file.h"
#include "model_store/formats/safetensors_writer.h"
#include "model_store/text/tokenizer.h"
#include "model_store/text/unicode_text.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

TEST(HostileInput, MutatedSafetensorsNeverCrash) {
  std::map<std::string, F32Tensor> tensors;
  tensors["a"] = {{3, 4}, std::vector<float>(12, 1.5f)};
  tensors["b.weight"] = {{5}, std::vector<float>(5, -2.0f)};
  const std::string valid = SerializeSafetensors(tensors);
  std::mt19937 rng(11);
  int accepted = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 3) {
        case 0:
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
          break;
        case 1:
          bytes.resize(rng() % (bytes.size() + 1));
          break;
        default:
          bytes.insert(rng() % (bytes.size() + 1), 1, static_cast<char>(rng()));
      }
      if (bytes.empty()) break;
    }
    auto file = SafetensorsFile::FromBytes("fuzz", reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size());
    if (!file.ok()) continue;
    ++accepted;
    for (const auto& [name, view] : (*file)->tensors()) {
      // Every accepted view lies inside the buffer.
      ASSERT_GE(view.data, reinterpret_cast<const uint8_t*>(bytes.data()));
      ASSERT_LE(view.data + view.size_bytes,
                reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size());
    }
  }
  EXPECT_LT(accepted, 5000) << "mutations must be refused sometimes";
}

// WordPiece (tiny) and Unigram with Metaspace and byte fallback (XLM-R).
class HostileTokenizerInput : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileTokenizerInput, RandomTextNeverCrashesTheTokenizer) {
  auto tokenizer = Tokenizer::Load(GetParam());
  ASSERT_TRUE(tokenizer.ok());
  std::mt19937 rng(12);
  // Pieces that stress normalisation: combining marks, CJK, emoji, controls, specials.
  const std::vector<std::string> pieces = {
      "a",
      "Z",
      " ",
      "\t",
      "\n",
      "\xCC\x81",
      "\xE4\xB8\xAD",
      "\xF0\x9F\x99\x82",
      "\x01",
      std::string(1, '\0'),
      "[SEP]",
      "[CLS",
      "##",
      "\xC4\xB0",
      "\xEF\xBF\xBD",
      "!",
      "\xE2\x80\x8B",
      "<s>",
      "\xE2\x96\x81",              // the Metaspace mark
      "\xEF\xBD\xB1\xEF\xBE\x9E",  // halfwidth katakana + voiced mark
      "\xEF\xAC\x81",              // fi ligature
      "\xC3"};
  int invalid = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    auto tokens = (*tokenizer)->Tokenize(text);
    if (!tokens.ok()) {
      EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
      ++invalid;
      continue;
    }
    ASSERT_EQ(tokens->ids.size(), tokens->spans.size());
    for (size_t i = 0; i < tokens->ids.size(); ++i) {
      ASSERT_LT(static_cast<size_t>(tokens->ids[i]), (*tokenizer)->vocab_size());
      ASSERT_LE(tokens->spans[i].end, text.size());
      ASSERT_TRUE(ValidateUtf8(text.substr(tokens->spans[i].begin,
                                           tokens->spans[i].end - tokens->spans[i].begin),
                               "span")
                      .ok());
    }
  }
  EXPECT_GT(invalid, 0) << "a lone \\xC3 makes some texts invalid UTF-8";
}

INSTANTIATE_TEST_SUITE_P(WordPieceAndUnigram, HostileTokenizerInput,
                         ::testing::Values(testing::TinyModelDir(), testing::XlmRobertaModelDir()));

}  // namespace
}  // namespace embedding::model_store
