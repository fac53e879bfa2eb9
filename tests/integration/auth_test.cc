// Bearer-token authentication against a real server: every EmbeddingService method refuses a
// call without an accepted token (UNAUTHENTICATED), health stays open for probes, /metrics is
// guarded when asked, tokens rotate without a restart, and no token reaches a log or an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>

#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFirst[] = "first-secret-4f1c9a";
constexpr char kSecond[] = "second-secret-77b2e0";
constexpr char kRotated[] = "rotated-secret-c0ffee";
constexpr char kWrong[] = "wrong-secret-deadbeef";

std::unique_ptr<client::EmbeddingClient> ClientWith(const testing::ServerProcess& server,
                                                    const std::string& token) {
  client::ClientOptions options{{server.grpc_address()}};
  options.bearer_token = token;
  options.max_attempts = 1;
  return client::EmbeddingClient::Connect(options).value();
}

// Every method of the service, answered with the code it gave.
std::vector<absl::StatusCode> CallEveryMethod(client::EmbeddingClient& client) {
  v1::TokenizeRequest tokenize;
  tokenize.add_inputs("text");
  auto context = client.NewContext();
  auto stream = client.stub().EmbedStream(context.get());
  v1::EmbedStreamRequest item;
  item.set_request_id("1");
  item.mutable_request()->add_inputs("text");
  stream->Write(item);
  stream->WritesDone();
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) {
  }
  return {client.Embed(client::MakeEmbedRequest({"text"}, {})).status().code(),
          client.Tokenize(tokenize).status().code(), client.ListModels().status().code(),
          client.GetModelInfo().status().code(),
          client::FromGrpc(stream->Finish()).code()};
}

int HttpStatus(const std::string& address, const char* path, const std::string& token) {
  const size_t colon = address.rfind(':');
  httplib::Client http(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto response = http.Get(path, headers);
  return response ? response->status : -1;
}

TEST(Auth, BearerTokensGuardEveryMethodRotateAndNeverLeak) {
  const std::string dir = testing::MakeScratchDir("auth");
  const std::string tokens = dir + "/tokens";
  testing::WriteFile(tokens, std::string("# rotated monthly\n") + kFirst + "\n\n" + kSecond + "\n");
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir(),
                                 "--auth-token-file=" + tokens, "--auth-metrics"});
  ASSERT_TRUE(server.ok()) << server.Log();
  const std::vector<absl::StatusCode> all_ok(5, absl::StatusCode::kOk);
  const std::vector<absl::StatusCode> all_refused(5, absl::StatusCode::kUnauthenticated);

  EXPECT_EQ(CallEveryMethod(*ClientWith(server, "")), all_refused);
  EXPECT_EQ(CallEveryMethod(*ClientWith(server, kWrong)), all_refused);
  EXPECT_EQ(CallEveryMethod(*ClientWith(server, kFirst)), all_ok);
  EXPECT_EQ(CallEveryMethod(*ClientWith(server, kSecond)), all_ok);
  auto refused = ClientWith(server, kWrong)->ListModels();
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("authorization"), Not(HasSubstr(kWrong))));

  // Probes stay open; /metrics is guarded.
  EXPECT_TRUE(ClientWith(server, "")->IsServing().value_or(false));
  EXPECT_EQ(HttpStatus(server.http_address(), "/healthz", ""), 200);
  EXPECT_EQ(HttpStatus(server.http_address(), "/readyz", ""), 200);
  EXPECT_EQ(HttpStatus(server.http_address(), "/metrics", ""), 401);
  EXPECT_EQ(HttpStatus(server.http_address(), "/metrics", kWrong), 401);
  EXPECT_EQ(HttpStatus(server.http_address(), "/metrics", kSecond), 200);

  // Rotation: the file changes, the server follows within a second or two, no restart.
  testing::WriteFile(tokens, std::string(kSecond) + "\n" + kRotated + "\n");
  absl::SleepFor(absl::Milliseconds(1100));
  std::vector<absl::StatusCode> first_after;
  for (int i = 0; i < 30; ++i) {  // the server checks the file at most once a second
    first_after = CallEveryMethod(*ClientWith(server, kFirst));
    if (first_after == all_refused) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(first_after, all_refused);
  EXPECT_EQ(CallEveryMethod(*ClientWith(server, kRotated)), all_ok);

  // A file emptied by mistake keeps the tokens that worked.
  testing::WriteFile(tokens, "");
  absl::SleepFor(absl::Milliseconds(1100));
  EXPECT_EQ(CallEveryMethod(*ClientWith(server, kRotated)), all_ok);

  const std::string log = server.Log();
  for (const char* secret : {kFirst, kSecond, kRotated, kWrong})
    EXPECT_THAT(log, Not(HasSubstr(secret))) << "a token reached the log";
}

TEST(Auth, AMissingOrEmptyTokenFileIsAStartUpErrorNamingTheFlag) {
  testing::ServerProcess missing(
      {"--model=tiny=" + testing::TinyModelDir(), "--auth-token-file=/nonexistent/tokens"},
      absl::Seconds(20));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.Wait(), 2);
  EXPECT_THAT(missing.Log(), HasSubstr("--auth-token-file=/nonexistent/tokens"));
  const std::string empty = testing::MakeScratchDir("auth_empty") + "/tokens";
  testing::WriteFile(empty, "# nothing yet\n");
  testing::ServerProcess no_token(
      {"--model=tiny=" + testing::TinyModelDir(), "--auth-token-file=" + empty},
      absl::Seconds(20));
  EXPECT_EQ(no_token.Wait(), 2);
  EXPECT_THAT(no_token.Log(), HasSubstr("holds no token"));
}

}  // namespace
}  // namespace embedding
