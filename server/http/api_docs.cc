#include "server/http/api_docs.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "server/http/openapi_document.h"

namespace embedding::server {
namespace {

// Swagger UI's own entry point, pointed at this server's document; its files from /docs/.
constexpr char kPage[] = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>embedding_server: HTTP routes</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui"});</script>
</body>
</html>
)html";

absl::StatusOr<std::string> ReadFile(const std::string& dir, const std::string& name) {
  const std::string path = absl::StrCat(dir, "/", name);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.is_open() || text.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--api-docs-dir=", dir, ": cannot read ", path,
        " (a folder of npm's swagger-ui-dist: swagger-ui-bundle.js and swagger-ui.css)"));
  }
  return text.str();
}

void Serve(HttpListener& listener, const std::string& path, const char* type,
           std::shared_ptr<const std::string> body) {
  listener.Route("GET", path, [type, body](std::shared_ptr<HttpExchange> ex) {
    ex->Respond({200, type, *body, {{"Cache-Control", "max-age=3600"}}});
  });
}

}  // namespace

absl::StatusOr<ApiDocs> ApiDocs::Load(const std::string& swagger_ui_dir) {
  ApiDocs docs;
  if (swagger_ui_dir.empty()) return docs;
  absl::StatusOr<std::string> bundle = ReadFile(swagger_ui_dir, "swagger-ui-bundle.js");
  if (!bundle.ok()) return bundle.status();
  absl::StatusOr<std::string> css = ReadFile(swagger_ui_dir, "swagger-ui.css");
  if (!css.ok()) return css.status();
  docs.bundle_js_ = std::make_shared<const std::string>(*std::move(bundle));
  docs.css_ = std::make_shared<const std::string>(*std::move(css));
  return docs;
}

void ApiDocs::AddRoutes(HttpListener& listener) const {
  listener.Route("GET", "/openapi.json", [](std::shared_ptr<HttpExchange> ex) {
    ex->Respond({200, "application/json", OpenApiDocument(), {}});
  });
  if (bundle_js_ == nullptr) return;
  Serve(listener, "/docs", "text/html; charset=utf-8", std::make_shared<const std::string>(kPage));
  Serve(listener, "/docs/swagger-ui-bundle.js", "text/javascript", bundle_js_);
  Serve(listener, "/docs/swagger-ui.css", "text/css", css_);
}

}  // namespace embedding::server
