// The OpenAPI 3.1 document of every HTTP route (docs/openapi.json, compiled in), as
// GET /openapi.json serves it: info.version set to this server's version.
#pragma once

#include <string>

namespace embedding::server {

// The document's JSON text; built once, then shared. Thread-safe.
const std::string& OpenApiDocument();

}  // namespace embedding::server
