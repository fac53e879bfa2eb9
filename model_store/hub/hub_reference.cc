#include "model_store/hub/hub_reference.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace embedding::model_store {
namespace {

constexpr size_t kMaxPart = 96;

bool AllowedChar(char c, bool slash) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-' || (slash && c == '/');
}

absl::Status Invalid(absl::string_view field, absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": \"", text.substr(0, 200), "\" is not a Hub repository id: ", why));
}

}  // namespace

absl::StatusOr<HubReference> ParseHubReference(absl::string_view text, absl::string_view field) {
  HubReference out;
  absl::string_view repo = text;
  if (const size_t at = text.find('@'); at != absl::string_view::npos) {
    repo = text.substr(0, at);
    out.revision = std::string(text.substr(at + 1));
    if (out.revision.empty()) return Invalid(field, text, "empty revision after '@'");
    for (char c : out.revision)
      if (!AllowedChar(c, /*slash=*/true))
        return Invalid(field, text, "a revision holds only [A-Za-z0-9_.-/]");
    if (absl::StrContains(out.revision, "..") || out.revision.front() == '/' ||
        out.revision.back() == '/')
      return Invalid(field, text, "a revision may not hold \"..\" or start or end with '/'");
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(repo, '/');
  if (parts.size() > 2) return Invalid(field, text, "more than one '/'");
  for (absl::string_view part : parts) {
    if (part.empty()) return Invalid(field, text, "an empty part (or an absolute path)");
    if (part.size() > kMaxPart) return Invalid(field, text, "a part longer than 96 characters");
    for (char c : part)
      if (!AllowedChar(c, /*slash=*/false))
        return Invalid(field, text, "characters outside [A-Za-z0-9_.-]");
    if (absl::StrContains(part, "..") || absl::StrContains(part, "--"))
      return Invalid(field, text, "\"..\" and \"--\" are not allowed");
    if (part.front() == '.' || part.front() == '-')
      return Invalid(field, text, "a part may not start with '.' or '-'");
  }
  if (absl::EndsWith(repo, ".git")) return Invalid(field, text, "a trailing \".git\"");
  out.repo = std::string(repo);
  return out;
}

bool IsCommitHash(absl::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision)
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  return true;
}

std::string ToString(const HubReference& reference) {
  return reference.revision == "main" ? reference.repo
                                      : absl::StrCat(reference.repo, "@", reference.revision);
}

}  // namespace embedding::model_store
