#include "common/quoted_value.h"

#include "absl/strings/str_cat.h"

namespace embedding {

std::string QuotedValue(absl::string_view value) {
  constexpr size_t kMaxEcho = 512;
  if (value.size() <= kMaxEcho) return absl::StrCat("'", value, "'");
  size_t cut = kMaxEcho;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat("'", value.substr(0, cut), "...' (", value.size(), " bytes)");
}

}  // namespace embedding
