// BPE as Hugging Face's tokenizers applies it: a word starts as its characters (unknown ones
// become byte tokens, the unknown token or nothing), then the pair of neighbours with the lowest
// merge rank is merged, leftmost first among equal ranks, until no ranked pair is left. A heap
// of candidate pairs keeps a long word O(n log n), never the O(n^2) rescan.
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model_store/text/subword_model.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct Merge {
  int32_t rank;
  int32_t new_id;
};

// One symbol of the word being merged: a doubly linked list over the characters.
struct Symbol {
  int32_t id;
  int prev;
  int next;
  uint32_t begin;  // original byte span of the characters it covers
  uint32_t end;
  bool merged_away = false;
};

struct Candidate {
  int32_t rank;
  int pos;  // the left symbol of the pair
  int32_t new_id;
  // std::priority_queue is a max-heap: the lowest rank, then the leftmost, comes out first.
  bool operator<(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

class Bpe : public SubwordModel {
 public:
  Bpe(std::unordered_map<std::string, int32_t> vocab, std::unordered_map<uint64_t, Merge> merges,
      BpeOptions options)
      : vocab_(std::move(vocab)), merges_(std::move(merges)), options_(std::move(options)) {}

  void Tokenize(const NormalizedText& word, TokenizedText* out) const override {
    if (options_.ignore_merges) {
      if (auto it = vocab_.find(EncodeUtf8(word, 0, word.size())); it != vocab_.end()) {
        out->ids.push_back(it->second);
        out->spans.push_back({word.front().begin, word.back().end});
        return;
      }
    }
    std::vector<Symbol> symbols = InitialSymbols(word);
    MergeAll(&symbols);
    for (const Symbol& s : symbols) {
      if (s.merged_away) continue;
      out->ids.push_back(s.id);
      out->spans.push_back({s.begin, s.end});
    }
  }

 private:
  std::vector<Symbol> InitialSymbols(const NormalizedText& word) const {
    std::vector<Symbol> symbols;
    auto add = [&](int32_t id, const NormalizedChar& c) {
      const int index = static_cast<int>(symbols.size());
      symbols.push_back({id, index - 1, index + 1, c.begin, c.end});
    };
    std::optional<Symbol> pending_unk;  // an unknown run waiting to be emitted (fuse_unk)
    auto flush_unk = [&] {
      if (!pending_unk) return;
      const int index = static_cast<int>(symbols.size());
      symbols.push_back(
          {pending_unk->id, index - 1, index + 1, pending_unk->begin, pending_unk->end});
      pending_unk.reset();
    };
    std::string key;
    for (size_t i = 0; i < word.size(); ++i) {
      key.clear();
      if (i > 0) key = options_.continuing_subword_prefix;
      AppendUtf8(word[i].cp, &key);
      if (i + 1 == word.size()) key += options_.end_of_word_suffix;
      if (auto it = vocab_.find(key); it != vocab_.end()) {
        flush_unk();
        add(it->second, word[i]);
        continue;
      }
      // Bytes leave a pending unknown pending, as Hugging Face's do.
      if (options_.byte_fallback && AddBytes(word[i], &symbols)) continue;
      if (!options_.unk_id) continue;
      if (pending_unk && options_.fuse_unk) {
        pending_unk->end = word[i].end;
        continue;
      }
      flush_unk();
      pending_unk = Symbol{*options_.unk_id, 0, 0, word[i].begin, word[i].end};
    }
    flush_unk();
    if (!symbols.empty()) symbols.back().next = -1;
    return symbols;
  }

  // The character's UTF-8 bytes as <0xNN> tokens; false (nothing added) unless all exist.
  bool AddBytes(const NormalizedChar& c, std::vector<Symbol>* symbols) const {
    std::string utf8;
    AppendUtf8(c.cp, &utf8);
    std::vector<int32_t> ids;
    for (unsigned char byte : utf8) {
      auto it = vocab_.find(absl::StrFormat("<0x%02X>", byte));
      if (it == vocab_.end()) return false;
      ids.push_back(it->second);
    }
    for (int32_t id : ids) {
      const int index = static_cast<int>(symbols->size());
      symbols->push_back({id, index - 1, index + 1, c.begin, c.end});
    }
    return true;
  }

  void MergeAll(std::vector<Symbol>* symbols_ptr) const {
    std::vector<Symbol>& symbols = *symbols_ptr;
    std::priority_queue<Candidate> queue;
    auto push_pair = [&](int left) {
      const int right = symbols[left].next;
      if (right < 0) return;
      auto it = merges_.find(PairKey(symbols[left].id, symbols[right].id));
      if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
    };
    for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) push_pair(i);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = symbols[top.pos];
      if (left.merged_away || left.next < 0) continue;
      Symbol& right = symbols[left.next];
      // Stale: one side was merged since this pair was queued.
      auto it = merges_.find(PairKey(left.id, right.id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;
      left.id = top.new_id;
      left.end = std::max(left.end, right.end);
      right.merged_away = true;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = top.pos;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(top.pos);
    }
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SubwordModel>> MakeBpe(
    std::unordered_map<std::string, int32_t> vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options) {
  std::unordered_map<uint64_t, Merge> ranked;
  ranked.reserve(merges.size());
  const size_t prefix = options.continuing_subword_prefix.size();
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    // The right part carries the continuation prefix, which the merged token does not repeat.
    const std::string merged =
        left + (right.compare(0, prefix, options.continuing_subword_prefix) == 0
                    ? right.substr(prefix)
                    : right);
    int32_t ids[3];
    const std::string* parts[3] = {&left, &right, &merged};
    for (int k = 0; k < 3; ++k) {
      auto it = vocab.find(*parts[k]);
      if (it == vocab.end()) {
        return absl::DataLossError(
            absl::StrCat("model.merges[", rank, "]: '", *parts[k], "' is not in model.vocab"));
      }
      ids[k] = it->second;
    }
    // A repeated pair keeps its last rank, as Hugging Face's map insertion does.
    ranked[PairKey(ids[0], ids[1])] = {static_cast<int32_t>(rank), ids[2]};
  }
  return std::make_unique<Bpe>(std::move(vocab), std::move(ranked), std::move(options));
}

}  // namespace embedding::model_store
