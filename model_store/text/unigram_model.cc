// Unigram: the segmentation of a word into vocabulary pieces with the highest total log
// probability (Viterbi over a byte trie of the pieces), as Hugging Face tokenizers computes it:
// a character no piece covers costs the lowest piece score less 10, adjacent unknown characters
// fuse into one unknown token, and with byte fallback an unknown token becomes <0xNN> pieces.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model_store/text/subword_model.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

// Hugging Face's K_UNK_PENALTY.
constexpr double kUnknownPenalty = 10.0;

// A byte trie over the pieces: node 0 is the root; edges in one hash map keyed (node, byte).
class PieceTrie {
 public:
  void Insert(const std::string& piece, int32_t id) {
    uint32_t node = 0;
    for (char c : piece) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        it = edges_.emplace(key, static_cast<uint32_t>(ids_.size())).first;
        ids_.push_back(-1);
      }
      node = it->second;
    }
    ids_[node] = id;
  }

  // Calls f(length_in_bytes, id) for every piece that prefixes text[begin..].
  template <typename F>
  void ForEachPrefix(const std::string& text, size_t begin, F f) const {
    uint32_t node = 0;
    for (size_t i = begin; i < text.size(); ++i) {
      auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
      if (it == edges_.end()) return;
      node = it->second;
      if (ids_[node] >= 0) f(i + 1 - begin, ids_[node]);
    }
  }

 private:
  std::unordered_map<uint64_t, uint32_t> edges_;
  std::vector<int32_t> ids_{-1};
};

class Unigram : public SubwordModel {
 public:
  Unigram(std::vector<std::pair<std::string, double>> pieces, UnigramOptions options)
      : pieces_(std::move(pieces)), options_(options) {
    double min_score = std::numeric_limits<double>::max();
    for (size_t id = 0; id < pieces_.size(); ++id) {
      trie_.Insert(pieces_[id].first, static_cast<int32_t>(id));
      piece_ids_.emplace(pieces_[id].first, static_cast<int32_t>(id));
      min_score = std::min(min_score, pieces_[id].second);
    }
    unknown_score_ = min_score - kUnknownPenalty;
    if (options_.byte_fallback) {
      for (int b = 0; b < 256; ++b) {
        auto it = piece_ids_.find(absl::StrFormat("<0x%02X>", b));
        byte_ids_[b] = it == piece_ids_.end() ? -1 : it->second;
      }
    }
  }

  void Tokenize(const NormalizedText& word, TokenizedText* out) const override {
    std::string utf8;
    std::vector<size_t> char_start;  // byte offset of each character, plus the end
    for (const auto& c : word) {
      char_start.push_back(utf8.size());
      AppendUtf8(c.cp, &utf8);
    }
    char_start.push_back(utf8.size());
    // char_of[byte] for character boundaries only.
    std::vector<int32_t> char_of(utf8.size() + 1, -1);
    for (size_t i = 0; i < char_start.size(); ++i) char_of[char_start[i]] = static_cast<int32_t>(i);

    struct Best {
      double score = 0;
      int32_t id = -1;
      int32_t from = -1;  // start character; -1: unreached
    };
    std::vector<Best> best(word.size() + 1);
    best[0].from = 0;
    for (size_t c = 0; c < word.size(); ++c) {
      const double here = best[c].score;
      const size_t char_len = char_start[c + 1] - char_start[c];
      bool single_char_piece = false;
      trie_.ForEachPrefix(utf8, char_start[c], [&](size_t length, int32_t id) {
        const int32_t end = char_of[char_start[c] + length];
        if (end < 0) return;  // ends inside a character
        const double score = here + pieces_[id].second;
        Best& target = best[end];
        if (target.from < 0 || score > target.score) target = {score, id, static_cast<int32_t>(c)};
        if (length == char_len) single_char_piece = true;
      });
      if (!single_char_piece) {
        const double score = here + unknown_score_;
        Best& target = best[c + 1];
        if (target.from < 0 || score > target.score)
          target = {score, options_.unk_id, static_cast<int32_t>(c)};
      }
    }
    // Walk back; adjacent unknown characters fuse into one token (Hugging Face's fuse_unk,
    // always on for Unigram).
    std::vector<std::pair<int32_t, int32_t>> tokens;  // (id, start char), reversed
    std::vector<int32_t> ends;
    for (int32_t end = static_cast<int32_t>(word.size()); end > 0;) {
      const Best& node = best[end];
      if (node.id == options_.unk_id && !tokens.empty() && tokens.back().first == options_.unk_id) {
        tokens.back().second = node.from;
      } else {
        tokens.emplace_back(node.id, node.from);
        ends.push_back(end);
      }
      end = node.from;
    }
    for (size_t t = tokens.size(); t-- > 0;) {
      const auto [id, from] = tokens[t];
      const int32_t to = ends[t];
      const TextSpan span{word[from].begin, word[to - 1].end};
      if (id == options_.unk_id && options_.byte_fallback &&
          EmitBytes(utf8.substr(char_start[from], char_start[to] - char_start[from]), span, out))
        continue;
      out->ids.push_back(id);
      out->spans.push_back(span);
    }
  }

 private:
  // <0xNN> for each byte, when the vocabulary has all of them.
  bool EmitBytes(const std::string& bytes, const TextSpan& span, TokenizedText* out) const {
    for (char b : bytes) {
      if (byte_ids_[static_cast<uint8_t>(b)] < 0) return false;
    }
    for (char b : bytes) {
      out->ids.push_back(byte_ids_[static_cast<uint8_t>(b)]);
      out->spans.push_back(span);
    }
    return true;
  }

  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, int32_t> piece_ids_;
  UnigramOptions options_;
  PieceTrie trie_;
  double unknown_score_ = 0;
  int32_t byte_ids_[256] = {};
};

}  // namespace

absl::StatusOr<std::unique_ptr<SubwordModel>> MakeUnigram(
    std::vector<std::pair<std::string, double>> pieces, UnigramOptions options) {
  if (options.unk_id < 0 || static_cast<size_t>(options.unk_id) >= pieces.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.unk_id ", options.unk_id, " outside [0, ", pieces.size(), ")"));
  }
  return std::make_unique<Unigram>(std::move(pieces), options);
}

}  // namespace embedding::model_store
