// The server's own lines in both formats: text as before, JSON with the request log's time and
// event fields, a level, and the message whole (invalid UTF-8 replaced, not thrown on).
#include "server/observability/server_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

const absl::Time kNoon = absl::FromUnixSeconds(1764504000);  // 2025-11-30T12:00:00Z

TEST(ServerLog, TextLineIsTheMessageAfterTheProgramName) {
  EXPECT_EQ(FormatServerLine(LogFormat::kText, LogLevel::kInfo, "ready", kNoon),
            "embedding_server: ready\n");
}

TEST(ServerLog, JsonLineHasTimeEventLevelAndMessage) {
  const std::string line = FormatServerLine(LogFormat::kJson, LogLevel::kWarning,
                                            "keeping the previous tokens: \"x\"", kNoon);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["time"], "2025-11-30T12:00:00+00:00");
  EXPECT_EQ(json["event"], "server");
  EXPECT_EQ(json["level"], "warning");
  EXPECT_EQ(json["message"], "keeping the previous tokens: \"x\"");
  EXPECT_EQ(json.size(), 4u);
  EXPECT_EQ(nlohmann::json::parse(
                FormatServerLine(LogFormat::kJson, LogLevel::kError, "e", kNoon))["level"],
            "error");
}

TEST(ServerLog, InvalidUtf8AndNewlinesStayInOneParseableLine) {
  const std::string line =
      FormatServerLine(LogFormat::kJson, LogLevel::kInfo, "path /m/\xC3(\nsecond line", kNoon);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["message"], "path /m/\xEF\xBF\xBD(\nsecond line");
}

TEST(ServerLog, WritesInTheFormatSet) {
  std::ostringstream out;
  SetServerLogFormat(LogFormat::kJson);
  ServerLog(LogLevel::kInfo, "stopped", out);
  SetServerLogFormat(LogFormat::kText);
  ServerLog(LogLevel::kInfo, "stopped", out);
  std::istringstream lines(out.str());
  std::string json_line, text_line;
  std::getline(lines, json_line);
  std::getline(lines, text_line);
  EXPECT_EQ(nlohmann::json::parse(json_line)["message"], "stopped");
  EXPECT_EQ(text_line, "embedding_server: stopped");
}

TEST(ServerLog, UnknownFormatNamesTheFlag) {
  const auto bad = ParseLogFormat("xml");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("--log-format"));
}

}  // namespace
}  // namespace embedding::server
