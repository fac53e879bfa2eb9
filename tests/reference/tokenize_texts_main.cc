// tokenize_texts: runs the C++ tokenizer of a directory's tokenizer.json on texts read as JSON
// and prints ids and code-point offsets, for tests/reference/compare_tokenizers.py.
// usage: tokenize_texts DIR < ["text", ...] > {"ids": [[...]], "offsets": [[[b, e]...]]}
#include <iostream>
#include <iterator>

#include "model_store/text/tokenizer.h"
#include "model_store/text/unicode_text.h"
#include "nlohmann/json.hpp"

using embedding::model_store::CodePointIndex;
using embedding::model_store::Tokenizer;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tokenize_texts DIR < texts.json\n";
    return 2;
  }
  auto tokenizer = Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) {
    std::cerr << tokenizer.status() << "\n";
    return 1;
  }
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  nlohmann::json ids = nlohmann::json::array(), offsets = nlohmann::json::array();
  for (const auto& item : nlohmann::json::parse(input)) {
    const std::string text = item.get<std::string>();
    auto tokens = (*tokenizer)->Tokenize(text);
    if (!tokens.ok()) {
      std::cerr << tokens.status() << "\n";
      return 1;
    }
    const CodePointIndex index(text);
    nlohmann::json spans = nlohmann::json::array();
    for (const auto& span : tokens->spans)
      spans.push_back({index.CharsBefore(span.begin), index.CharsBefore(span.end)});
    ids.push_back(tokens->ids);
    offsets.push_back(spans);
  }
  std::cout << nlohmann::json{{"ids", ids}, {"offsets", offsets}}.dump() << "\n";
  return 0;
}
