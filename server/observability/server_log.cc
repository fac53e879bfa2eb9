#include "server/observability/server_log.h"

#include <atomic>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/name_table.h"
#include "common/quoted_value.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

std::atomic<LogFormat> server_log_format{LogFormat::kText};

constexpr NamedValue<LogLevel> kLevelNames[] = {
    {LogLevel::kInfo, "info"}, {LogLevel::kWarning, "warning"}, {LogLevel::kError, "error"}};
constexpr NamedValue<LogFormat> kFormatNames[] = {{LogFormat::kText, "text"},
                                                  {LogFormat::kJson, "json"}};

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(const std::string& name) {
  if (const auto format = ValueNamed(kFormatNames, name)) return *format;
  return absl::InvalidArgumentError(absl::StrCat("--log-format=", QuotedValue(name), ": must be ",
                                                 JoinedNames(kFormatNames, " or ")));
}

void SetServerLogFormat(LogFormat format) { server_log_format.store(format); }

std::string FormatServerLine(LogFormat format, LogLevel level, absl::string_view message,
                             absl::Time now) {
  if (format == LogFormat::kText) return absl::StrCat("embedding_server: ", message, "\n");
  const nlohmann::json json = {
      {"time", absl::FormatTime(absl::RFC3339_full, now, absl::UTCTimeZone())},
      {"event", "server"},
      {"level", NameOf(kLevelNames, level)},
      {"message", std::string(message)}};
  // Invalid UTF-8 (a path, a protobuf message quoting a request) is replaced, never thrown on.
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void ServerLog(LogLevel level, absl::string_view message) { ServerLog(level, message, std::cerr); }

void ServerLog(LogLevel level, absl::string_view message, std::ostream& out) {
  out << FormatServerLine(server_log_format.load(), level, message, absl::Now()) << std::flush;
}

}  // namespace embedding::server
