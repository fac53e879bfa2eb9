// The routes that describe the HTTP routes: GET /openapi.json (openapi_document.h) on both
// listeners and, with --api-docs-dir, GET /docs, where Swagger UI renders that document.
// Swagger UI's two files (npm's swagger-ui-dist) are read once at start and served from
// memory: the page needs no network, and no request opens a file.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/http/http_listener.h"

namespace embedding::server {

class ApiDocs {
 public:
  ApiDocs() = default;  // /openapi.json only

  // Reads swagger-ui-bundle.js and swagger-ui.css from `swagger_ui_dir`; empty: no /docs.
  // INVALID_ARGUMENT naming --api-docs-dir and the file when one cannot be read.
  static absl::StatusOr<ApiDocs> Load(const std::string& swagger_ui_dir);

  // Routes GET /openapi.json, and /docs with its two files when loaded with a directory (the
  // routes share the files; copies are cheap). Unauthenticated: they describe the routes and
  // hold no data.
  void AddRoutes(HttpListener& listener) const;

 private:
  std::shared_ptr<const std::string> bundle_js_;  // null: no /docs
  std::shared_ptr<const std::string> css_;
};

}  // namespace embedding::server
