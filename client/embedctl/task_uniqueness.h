// The rule every retrieval task keeps, so that a query has one right answer: within a pool the
// candidates are pairwise distinct, and a query's text occurs in its own candidate and in no
// other one, nor in the shared haystack. Texts compare after normalisation (NFKC, case
// folding, marks, default-ignorable code points, whitespace and control characters all
// dropped): at least as coarse as any tokenizer's normaliser and pre-tokenizer ("disk : full"
// and "disk: full" are the same WordPiece tokens), so a span that cannot be found here cannot be
// found among the model's tokens either. Coarser only costs a rare needless redraw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace embedding::client {

// `text` as the rule compares it. Text that is not UTF-8 compares by its bytes, ASCII folded.
std::string NormalizedText(std::string_view text);

// Occurrences of `needle` in `text`, overlapping ones included; 0 for an empty needle.
uint32_t CountOccurrences(std::string_view text, std::string_view needle);

// A pool filled one candidate at a time: a (document, query) pair joins only if the rule still
// holds with it.
class UniquePool {
 public:
  // `shared` is what every candidate of the pool holds besides its own fact (a haystack); empty
  // when the candidates share nothing (lexical).
  explicit UniquePool(std::string_view shared);

  // Adds the pair when the query occurs in `document`, not in the shared text, and in no member;
  // no member's query occurs in `document`; and `document` equals no member. False otherwise,
  // and the pool is unchanged.
  bool TryAdd(std::string_view document, std::string_view query);
  size_t size() const { return documents_.size(); }

 private:
  std::string shared_;
  std::vector<std::string> documents_, queries_;  // normalised
};

// Per query i of a bucket whose pools are consecutive runs of `pool_size` documents: the count
// of its text in each candidate of its pool, in pool order. The proof the tasks file carries.
std::vector<std::vector<uint32_t>> QuerySpanCounts(const std::vector<std::string>& documents,
                                                   const std::vector<std::string>& queries,
                                                   size_t pool_size);

}  // namespace embedding::client
