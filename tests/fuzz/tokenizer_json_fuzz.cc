// libFuzzer target: a tokenizer.json, then text to tokenise with it. The input is the JSON, a
// NUL byte, and the text (seeds/tokenizer_json/ holds readable examples). A loaded tokenizer
// must tokenise anything into in-vocabulary ids with spans inside the text, or refuse it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model_store/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view json = input.substr(0, split);
  const std::string_view text =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  auto tokenizer = embedding::model_store::Tokenizer::FromJson("fuzz", json);
  if (!tokenizer.ok()) return 0;
  auto tokens = (*tokenizer)->Tokenize(text);
  if (!tokens.ok()) return 0;
  if (tokens->ids.size() != tokens->spans.size()) std::abort();
  for (size_t i = 0; i < tokens->ids.size(); ++i) {
    const auto& span = tokens->spans[i];
    if (tokens->ids[i] < 0 || span.begin > span.end || span.end > text.size()) std::abort();
  }
  (*tokenizer)->AddSpecialTokens(tokens->ids);
  return 0;
}
