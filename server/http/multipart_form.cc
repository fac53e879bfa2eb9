#include "server/http/multipart_form.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace embedding::server {
namespace {

// The value of `key` in a header's parameters ("form-data; name=\"file\""), unquoted; a
// quoted value may hold ';'. Empty when absent.
std::string Parameter(absl::string_view header, absl::string_view key) {
  size_t at = 0;
  while ((at = header.find(';', at)) != absl::string_view::npos) {
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(header.substr(++at));
    if (!absl::StartsWithIgnoreCase(rest, key)) continue;
    rest.remove_prefix(key.size());
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (!absl::ConsumePrefix(&rest, "=")) continue;
    rest = absl::StripLeadingAsciiWhitespace(rest);
    std::string value;
    if (absl::ConsumePrefix(&rest, "\"")) {
      for (size_t i = 0; i < rest.size() && rest[i] != '"'; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;  // quoted-pair
        value.push_back(rest[i]);
      }
    } else {
      value = std::string(rest.substr(0, rest.find(';')));
      absl::StripTrailingAsciiWhitespace(&value);
    }
    return value;
  }
  return "";
}

absl::Status BodyError(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("body: not multipart/form-data: ", why));
}

// One part: its headers, a blank line, its data.
absl::StatusOr<FormPart> ReadPart(absl::string_view part) {
  const size_t blank = part.find("\r\n\r\n");
  if (blank == absl::string_view::npos) return BodyError("a part without headers");
  FormPart form;
  for (absl::string_view line : absl::StrSplit(part.substr(0, blank), "\r\n")) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, colon)),
                                "Content-Disposition"))
      continue;
    const absl::string_view value = line.substr(colon + 1);
    form.name = Parameter(value, "name");
    form.filename = Parameter(value, "filename");
  }
  if (form.name.empty()) return BodyError("a part without a Content-Disposition name");
  form.data = part.substr(blank + 4);
  return form;
}

// The next delimiter at or after `from`: "\r\n--boundary" followed by "--" (the close) or by
// optional blanks and a CRLF (RFC 2046's transport padding). The same bytes followed by
// anything else are content.
size_t FindDelimiter(absl::string_view body, absl::string_view delimiter, size_t from) {
  for (size_t at = body.find(delimiter, from); at != absl::string_view::npos;
       at = body.find(delimiter, at + 1)) {
    absl::string_view after = body.substr(at + delimiter.size());
    if (absl::StartsWith(after, "--")) return at;
    while (!after.empty() && (after.front() == ' ' || after.front() == '\t'))
      after.remove_prefix(1);
    if (absl::StartsWith(after, "\r\n")) return at;
  }
  return absl::string_view::npos;
}

}  // namespace

absl::StatusOr<std::vector<FormPart>> ParseMultipartForm(absl::string_view content_type,
                                                         absl::string_view body,
                                                         size_t max_parts) {
  if (!absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(content_type),
                                  "multipart/form-data")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Content-Type: must be multipart/form-data, not \"", content_type.substr(0, 64), "\""));
  }
  const std::string boundary = Parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 70) {  // RFC 2046: 1 to 70 characters
    return absl::InvalidArgumentError("Content-Type: multipart/form-data names no boundary");
  }
  const std::string first = absl::StrCat("--", boundary);
  const std::string delimiter = absl::StrCat("\r\n--", boundary);
  // The preamble before the first delimiter is ignored, as RFC 2046 says.
  size_t at = absl::StartsWith(body, first) ? 0 : FindDelimiter(body, delimiter, 0);
  if (at == absl::string_view::npos) return BodyError("no boundary delimiter");
  at += at == 0 && absl::StartsWith(body, first) ? first.size() : delimiter.size();
  std::vector<FormPart> parts;
  while (true) {
    const absl::string_view rest = body.substr(at);
    if (absl::StartsWith(rest, "--")) return parts;  // the close delimiter
    const size_t line_end = rest.find("\r\n");
    if (line_end == absl::string_view::npos) return BodyError("no close delimiter");
    const size_t start = at + line_end + 2;  // past the delimiter line's transport padding
    const size_t end = FindDelimiter(body, delimiter, start);
    if (end == absl::string_view::npos) return BodyError("no close delimiter");
    if (parts.size() == max_parts)
      return BodyError(absl::StrCat("more than ", max_parts, " parts"));
    // A part with no headers starts with the blank line itself.
    absl::string_view part = body.substr(start - 2, end - start + 2);
    absl::StatusOr<FormPart> form = ReadPart(part);
    if (!form.ok()) return form.status();
    parts.push_back(*std::move(form));
    at = end + delimiter.size();
  }
}

}  // namespace embedding::server
