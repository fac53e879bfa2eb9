#include "model_store/text/unicode_regex.h"

#include <oniguruma.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// Frees a search region on every path.
struct Region {
  Region() : region(onig_region_new()) {}
  ~Region() { onig_region_free(region, 1); }
  OnigRegion* region;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnicodeRegex>> UnicodeRegex::Compile(const std::string& pattern) {
  InitializeOnce();
  OnigRegex regex = nullptr;
  OnigErrorInfo info;
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int code = onig_new(&regex, begin, begin + pattern.size(), ONIG_OPTION_NONE,
                            ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (code != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, code, &info);
    return absl::InvalidArgumentError(
        absl::StrCat("regex '", pattern, "': ", reinterpret_cast<char*>(message)));
  }
  return std::unique_ptr<UnicodeRegex>(new UnicodeRegex(regex));
}

UnicodeRegex::~UnicodeRegex() { onig_free(static_cast<OnigRegex>(regex_)); }

std::vector<std::pair<size_t, size_t>> UnicodeRegex::FindAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* end = begin + text.size();
  Region region;
  size_t at = 0;
  while (at <= text.size()) {
    const int found = onig_search(static_cast<OnigRegex>(regex_), begin, end, begin + at, end,
                                  region.region, ONIG_OPTION_NONE);
    if (found < 0) break;  // ONIG_MISMATCH, or an error such as the retry limit
    const size_t match_begin = region.region->beg[0];
    const size_t match_end = region.region->end[0];
    if (match_end > match_begin) {
      matches.emplace_back(match_begin, match_end);
      at = match_end;
      continue;
    }
    // An empty match is kept unless it touches the previous match; the search moves on a
    // character so it cannot repeat.
    if (matches.empty() || matches.back().second != match_begin)
      matches.emplace_back(match_begin, match_end);
    if (match_begin >= text.size()) break;
    char32_t cp;
    at = match_begin + DecodeCodePoint(text, match_begin, &cp);
  }
  return matches;
}

}  // namespace embedding::model_store
