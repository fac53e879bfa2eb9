// A model named by its Hugging Face Hub repository, "org/name" or "name", with an optional
// "@revision" (a branch, a tag or a 40-hex commit; "main" when absent).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace embedding::model_store {

struct HubReference {
  std::string repo;               // "BAAI/bge-m3"
  std::string revision = "main";  // as given
};

// Parses "org/name[@revision]". INVALID_ARGUMENT naming `field` and the rule broken: a repo id
// is one or two parts of [A-Za-z0-9_.-] joined by one '/', with no "..", no "--", no leading
// '.' or '-', no trailing ".git", at most 96 characters a part; a revision is
// [A-Za-z0-9_.-/] with no ".." and no leading or trailing '/'. These keep every cache path
// inside the cache.
absl::StatusOr<HubReference> ParseHubReference(absl::string_view text, absl::string_view field);

// A revision that is a full commit hash (40 lowercase hex digits) needs no lookup.
bool IsCommitHash(absl::string_view revision);

// "org/name@revision", or "org/name" for main.
std::string ToString(const HubReference& reference);

}  // namespace embedding::model_store
