// The server's own lines: start-up, listeners, models, reloads, warnings, drain. As text
// ("embedding_server: MESSAGE") or, with --log-format=json, one JSON object per line
// ({"time", "event": "server", "level", "message"}, the request log's shape), so a log
// pipeline parses every line the server writes, not only the per-request ones.
#pragma once

#include <iosfwd>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace embedding::server {

enum class LogFormat { kText, kJson };
enum class LogLevel { kInfo, kWarning, kError };

// "text" | "json"; INVALID_ARGUMENT naming --log-format otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(const std::string& name);

// Process-wide, like the stderr it writes to. Text until set (a bad flag is reported as text).
void SetServerLogFormat(LogFormat format);

// The line as it is written, newline included.
std::string FormatServerLine(LogFormat format, LogLevel level, absl::string_view message,
                             absl::Time now);

// Writes one line to `out` (stderr by default) in one write, so lines of several threads do
// not interleave.
void ServerLog(LogLevel level, absl::string_view message);
void ServerLog(LogLevel level, absl::string_view message, std::ostream& out);

}  // namespace embedding::server
