// A user-supplied value (model name, prompt name) quoted in an error message, bounded, so an
// error never echoes megabytes back to the caller or into a log line.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace embedding {

// 'value' whole up to 512 bytes; longer values as their first 512 bytes, cut on a UTF-8
// boundary, and their length: 'abc...' (10485760 bytes).
std::string QuotedValue(absl::string_view value);

}  // namespace embedding
