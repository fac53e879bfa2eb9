// The prose of a man page's roff source, for counting words in (the retrieval demo model's
// technical corpus), not for display: no renderer is involved.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace embedding::model_store {

// One string per paragraph, words separated by single spaces. Comments and requests are
// dropped, and so are no-fill blocks (.nf to .fi: synopses and code examples); font macros
// (.B, .BR, .I, ...) and headings keep their words; escapes (\fB, \-, \(em, \[...], \*(..)
// are removed or become the character they stand for. Paragraph macros (.PP, .SH, .TP, ...)
// and blank lines end a paragraph.
std::vector<std::string> RoffParagraphs(absl::string_view roff);

}  // namespace embedding::model_store
