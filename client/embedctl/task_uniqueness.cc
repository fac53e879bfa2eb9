#include "client/embedctl/task_uniqueness.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "absl/strings/ascii.h"

namespace embedding::client {
namespace {

bool IsSpace(utf8proc_int32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return true;
  const utf8proc_category_t category = utf8proc_category(cp);
  return category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL ||
         category == UTF8PROC_CATEGORY_ZP;
}

// The text without its whitespace.
std::string DropSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (size_t at = 0; at < text.size();) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n =
        utf8proc_iterate(bytes + at, static_cast<utf8proc_ssize_t>(text.size() - at), &cp);
    if (n <= 0) n = 1, cp = static_cast<unsigned char>(text[at]);  // not UTF-8: a byte as it is
    if (!IsSpace(cp)) out.append(text.substr(at, static_cast<size_t>(n)));
    at += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace

std::string NormalizedText(std::string_view text) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &mapped,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE |
                                     UTF8PROC_CASEFOLD | UTF8PROC_STRIPMARK | UTF8PROC_IGNORE |
                                     UTF8PROC_LUMP | UTF8PROC_STRIPCC));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (length < 0)
    return DropSpaces(absl::AsciiStrToLower(absl::string_view(text.data(), text.size())));
  return DropSpaces(
      std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(length)));
}

uint32_t CountOccurrences(std::string_view text, std::string_view needle) {
  if (needle.empty()) return 0;
  uint32_t count = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

UniquePool::UniquePool(std::string_view shared) : shared_(NormalizedText(shared)) {}

bool UniquePool::TryAdd(std::string_view document, std::string_view query) {
  std::string doc = NormalizedText(document), q = NormalizedText(query);
  if (q.empty() || CountOccurrences(doc, q) == 0 || CountOccurrences(shared_, q) > 0) return false;
  for (size_t m = 0; m < documents_.size(); ++m) {
    if (documents_[m] == doc || CountOccurrences(documents_[m], q) > 0 ||
        CountOccurrences(doc, queries_[m]) > 0) {
      return false;
    }
  }
  documents_.push_back(std::move(doc));
  queries_.push_back(std::move(q));
  return true;
}

std::vector<std::vector<uint32_t>> QuerySpanCounts(const std::vector<std::string>& documents,
                                                   const std::vector<std::string>& queries,
                                                   size_t pool_size) {
  std::vector<std::vector<uint32_t>> counts(queries.size());
  if (pool_size == 0) return counts;
  std::vector<std::string> pool;
  for (size_t i = 0; i < queries.size(); ++i) {
    const size_t first = i / pool_size * pool_size;
    if (i == first) {
      pool.clear();
      for (size_t j = first; j < std::min(documents.size(), first + pool_size); ++j)
        pool.push_back(NormalizedText(documents[j]));
    }
    const std::string query = NormalizedText(queries[i]);
    for (const std::string& candidate : pool)
      counts[i].push_back(CountOccurrences(candidate, query));
  }
  return counts;
}

}  // namespace embedding::client
