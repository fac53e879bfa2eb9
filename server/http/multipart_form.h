// A multipart/form-data body (RFC 7578) split into its parts, as OpenAI's SDKs send a file
// upload (POST /v1/files: a "purpose" field and a "file" part). Pure: no I/O; the parts view
// the body, so nothing is copied in proportion to it.
#pragma once

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::server {

struct FormPart {
  std::string name;      // Content-Disposition's name
  std::string filename;  // its filename ("" for a plain field)
  absl::string_view data;  // views the body passed to ParseMultipartForm
};

// Splits `body` by the boundary that `content_type` names. INVALID_ARGUMENT naming
// "Content-Type" for a type that is not multipart/form-data or names no boundary, "body" for a
// body that does not follow it (no closing delimiter, a part without headers or a name), and
// at most `max_parts` parts.
absl::StatusOr<std::vector<FormPart>> ParseMultipartForm(absl::string_view content_type,
                                                         absl::string_view body,
                                                         size_t max_parts = 16);

}  // namespace embedding::server
