#include "server/http/http_exchange.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace embedding::server {
namespace {

// application/x-www-form-urlencoded decoding: '+' is a space, %XX a byte; a malformed escape
// is kept as it is.
std::string FormDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int byte = 0;
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() && absl::ascii_isxdigit(text[i + 1]) &&
               absl::ascii_isxdigit(text[i + 2]) &&
               absl::SimpleHexAtoi(text.substr(i + 1, 2), &byte)) {
      out.push_back(static_cast<char>(byte));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

std::string HttpExchange::QueryParam(absl::string_view name) const {
  for (absl::string_view pair : absl::StrSplit(query_, '&', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (FormDecode(kv.first) == name) return FormDecode(kv.second);
  }
  return "";
}

}  // namespace embedding::server
