// RequestLog: which calls get a line, its two formats, and the throttle on failed-call lines.
#include "server/observability/request_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const CallRecord kOk{"Embed", "trace-1", absl::StatusCode::kOk, "", 0.25};
const CallRecord kBad{"Tokenize", "trace-2", absl::StatusCode::kInvalidArgument,
                      "inputs[0]: invalid UTF-8 at byte 3", 0.001};

TEST(RequestLog, JsonLinesCarryTheRequestIdCodeAndMessage) {
  std::ostringstream out;
  RequestLog log(LogFormat::kJson, RequestLogLevel::kAll, &out);
  log.Record(kOk);
  log.Record(kBad);
  const auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 2u);
  const auto ok = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(ok["method"], "Embed");
  EXPECT_EQ(ok["request_id"], "trace-1");
  EXPECT_EQ(ok["code"], "OK");
  EXPECT_DOUBLE_EQ(ok["seconds"].get<double>(), 0.25);
  EXPECT_FALSE(ok.contains("message"));
  const auto bad = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(bad["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(bad["message"], "inputs[0]: invalid UTF-8 at byte 3");
}

TEST(RequestLog, LevelsAndTextFormat) {
  std::ostringstream errors_only;
  RequestLog errors(LogFormat::kText, RequestLogLevel::kErrors, &errors_only);
  errors.Record(kOk);
  errors.Record(kBad);
  const auto lines = Lines(errors_only.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("rpc Tokenize request_id=trace-2 code=INVALID_ARGUMENT"));
  std::ostringstream none;
  RequestLog off(LogFormat::kText, RequestLogLevel::kOff, &none);
  off.Record(kBad);
  EXPECT_TRUE(none.str().empty());
  EXPECT_EQ(ParseLogFormat("xml").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseRequestLogLevel("some").status().message(), HasSubstr("--log-requests"));
}

TEST(RequestLog, FailedCallLinesAreThrottledAndCountTheSuppressed) {
  std::ostringstream out;
  RequestLog log(LogFormat::kJson, RequestLogLevel::kErrors, &out);
  const absl::Time start = absl::FromUnixSeconds(5000);
  for (int i = 0; i < 100; ++i) log.Record(kBad, start + absl::Milliseconds(i));
  log.Record(kBad, start + absl::Seconds(2));
  const auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 21u);
  EXPECT_EQ(nlohmann::json::parse(lines.back())["suppressed_before"], 80);
}

}  // namespace
}  // namespace embedding::server
