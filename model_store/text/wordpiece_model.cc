// WordPiece: greedy longest-match-first; one unmatched piece turns the whole word into the
// unknown token, as does a word longer than max_input_chars_per_word.
#include "model_store/text/subword_model.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

class WordPiece : public SubwordModel {
 public:
  WordPiece(std::unordered_map<std::string, int32_t> vocab, WordPieceOptions options)
      : vocab_(std::move(vocab)), options_(std::move(options)) {}

  void Tokenize(const NormalizedText& word, TokenizedText* out) const override {
    const TextSpan whole{word.front().begin, word.back().end};
    if (word.size() > static_cast<size_t>(options_.max_input_chars_per_word)) {
      out->ids.push_back(options_.unk_id);
      out->spans.push_back(whole);
      return;
    }
    std::string utf8;
    std::vector<size_t> boundary;  // byte offset of each character in `utf8`, plus the end
    for (const auto& c : word) {
      boundary.push_back(utf8.size());
      AppendUtf8(c.cp, &utf8);
    }
    boundary.push_back(utf8.size());
    const size_t first_piece = out->ids.size();
    const size_t n = word.size();
    std::string key;
    for (size_t start = 0; start < n;) {
      size_t end = n;
      int32_t id = -1;
      for (; end > start; --end) {
        key.assign(start > 0 ? options_.continuing_subword_prefix : std::string());
        key.append(utf8, boundary[start], boundary[end] - boundary[start]);
        if (auto it = vocab_.find(key); it != vocab_.end()) {
          id = it->second;
          break;
        }
      }
      if (id < 0) {
        out->ids.resize(first_piece);
        out->spans.resize(first_piece);
        out->ids.push_back(options_.unk_id);
        out->spans.push_back(whole);
        return;
      }
      out->ids.push_back(id);
      out->spans.push_back({word[start].begin, word[end - 1].end});
      start = end;
    }
  }

 private:
  std::unordered_map<std::string, int32_t> vocab_;
  WordPieceOptions options_;
};

}  // namespace

std::unique_ptr<SubwordModel> MakeWordPiece(std::unordered_map<std::string, int32_t> vocab,
                                            WordPieceOptions options) {
  return std::make_unique<WordPiece>(std::move(vocab), std::move(options));
}

}  // namespace embedding::model_store
