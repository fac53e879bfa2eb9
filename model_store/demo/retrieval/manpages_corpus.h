// The retrieval demo model's technical text: the Linux man-pages' sections 2 and 3 (system
// calls and the C library) as Debian's manpages-dev 6.03-2 installs them. WordNet alone is
// general English; technical words spelled out piece by piece all looked alike.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// dpkg's list of the files manpages-dev installed: the pages are taken from it, not from the
// man folders, which other packages (zlib1g-dev, libssl-dev, ...) also write into.
inline constexpr char kManPagesList[] = "/var/lib/dpkg/info/manpages-dev.list";

// Every regular page the list names (symbolic links are aliases of another page), in the
// list's order, as paragraphs of prose (roff_text.h). NOT_FOUND when the list or a page cannot
// be read (with the package to install); FAILED_PRECONDITION when the pages' digest differs
// from the pinned one (another version: the demo model would differ from other machines').
absl::StatusOr<std::vector<std::string>> ReadManPagesCorpus(const std::string& list_path);

}  // namespace embedding::model_store
