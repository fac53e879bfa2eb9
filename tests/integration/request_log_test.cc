// The request log of a real server: one JSON line per finished RPC with its request id, the
// client's x-request-id honoured when usable and returned in the response's trailing metadata
// either way; with --log-format=json the server's own lines are JSON as well.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <sstream>

#include "client/embedding_client.h"
#include "nlohmann/json.hpp"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

// The server log's JSON rpc lines.
std::vector<nlohmann::json> RpcLines(const std::string& log) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (!json.is_discarded() && json.is_object() && json.value("event", "") == "rpc")
      lines.push_back(json);
  }
  return lines;
}

// Calls Embed with `request_id` (none when empty); the id the server returned.
std::string EmbedWithRequestId(client::EmbeddingClient& client, const std::string& request_id,
                               const std::string& text, grpc::StatusCode* code) {
  auto context = client.NewContext();
  if (!request_id.empty()) context->AddMetadata("x-request-id", request_id);
  v1::EmbedResponse response;
  *code = client.stub().Embed(context.get(), client::MakeEmbedRequest({text}, {}), &response)
              .error_code();
  const auto& metadata = context->GetServerTrailingMetadata();
  auto it = metadata.find("x-request-id");
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

TEST(ServedRequestLog, JsonLinePerCallWithTheClientsRequestId) {
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir(), "--log-format=json",
                                 "--log-requests=all"});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  grpc::StatusCode code;
  EXPECT_EQ(EmbedWithRequestId(*client, "trace-42.a_b", "hello", &code), "trace-42.a_b");
  EXPECT_EQ(code, grpc::StatusCode::OK);
  // Unusable ids (spaces, too long) are replaced by a fresh one, which comes back too.
  const std::string fresh = EmbedWithRequestId(*client, "has spaces", "\xC3", &code);
  EXPECT_EQ(code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fresh.size(), 16u);
  const std::string generated = EmbedWithRequestId(*client, std::string(200, 'x'), "hi", &code);
  EXPECT_EQ(generated.size(), 16u);
  EXPECT_NE(generated, fresh);

  absl::SleepFor(absl::Milliseconds(200));
  const auto lines = RpcLines(server.Log());
  auto find = [&](const std::string& id) -> nlohmann::json {
    for (const auto& line : lines)
      if (line["request_id"] == id) return line;
    return nullptr;
  };
  const auto first = find("trace-42.a_b");
  ASSERT_FALSE(first.is_null()) << server.Log();
  EXPECT_EQ(first["method"], "Embed");
  EXPECT_EQ(first["code"], "OK");
  EXPECT_GT(first["seconds"].get<double>(), 0.0);
  const auto bad = find(fresh);
  ASSERT_FALSE(bad.is_null());
  EXPECT_EQ(bad["code"], "INVALID_ARGUMENT");
  EXPECT_THAT(bad["message"].get<std::string>(), ::testing::HasSubstr("inputs[0]"));
  EXPECT_FALSE(find(generated).is_null());

  // Every line the server wrote is JSON, its own lines too: the model loaded, the drain. (The
  // listener and ready lines on stdout were read as JSON to connect at all.)
  server.Signal(SIGTERM);
  ASSERT_EQ(server.Wait(), 0);
  std::vector<std::string> messages;
  std::istringstream in(server.Log());
  for (std::string line; std::getline(in, line);) {
    const auto json = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(!json.is_discarded() && json.is_object()) << line;
    EXPECT_TRUE(json.contains("time")) << line;
    if (json["event"] == "server") {
      messages.push_back(json["message"].get<std::string>());
    } else {
      EXPECT_EQ(json["event"], "rpc") << line;
    }
  }
  using ::testing::Contains;
  using ::testing::StartsWith;
  EXPECT_THAT(messages, Contains(StartsWith("model 'tiny' version ")));
  EXPECT_THAT(messages, Contains("signal 15"));
  EXPECT_THAT(messages, Contains("draining: new calls are refused"));
  EXPECT_THAT(messages, Contains("stopped"));
}

TEST(ServedRequestLog, BadLogFlagsAreStartUpErrors) {
  testing::ServerProcess bad({"--model=tiny=" + testing::TinyModelDir(), "--log-format=xml"},
                             absl::Seconds(20));
  EXPECT_EQ(bad.Wait(), 2);
  EXPECT_THAT(bad.Log(), ::testing::HasSubstr("--log-format"));
}

}  // namespace
}  // namespace embedding
