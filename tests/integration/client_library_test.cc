// The C++ client library against several real servers: round-robin spreading, and retries
// on UNAVAILABLE when one replica drains.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include "absl/time/clock.h"
#include "client/embedding_client.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

// Embed calls a server answered with `code`, read from its /metrics.
double EmbedCalls(const testing::ServerProcess& server, const std::string& code) {
  return testing::ScrapeMetric(server.http_address(), "embedding_requests_total\\{code=\"" + code +
                                                          "\",method=\"Embed\"\\}");
}

std::vector<std::unique_ptr<testing::ServerProcess>> StartThree() {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<testing::ServerProcess>(std::vector<std::string>{
        "--model=small=" + testing::SmallModelDir(), "--drain-timeout-s=60"}));
    EXPECT_TRUE(servers.back()->ok()) << servers.back()->Log();
  }
  return servers;
}

std::unique_ptr<client::EmbeddingClient> ClientFor(
    const std::vector<std::unique_ptr<testing::ServerProcess>>& servers) {
  client::ClientOptions options;
  for (const auto& s : servers) options.addresses.push_back(s->grpc_address());
  return client::EmbeddingClient::Connect(options).value();
}

TEST(ClientLibrary, RoundRobinReachesEveryServer) {
  auto servers = StartThree();
  auto client = ClientFor(servers);
  for (int i = 0; i < 30; ++i) {
    auto result = client->EmbedTexts({"request " + std::to_string(i)});
    ASSERT_TRUE(result.ok()) << result.status();
  }
  // A server counts an RPC when gRPC reports it done, which may come after the client has its
  // answer (seen under the sanitizers: 29 of 30 at the first scrape), so wait for the count.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::vector<double> calls(servers.size());
  double total = 0;
  while (true) {
    total = 0;
    for (size_t i = 0; i < servers.size(); ++i) total += calls[i] = EmbedCalls(*servers[i], "OK");
    if (total >= 30 || absl::Now() > deadline) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  for (double c : calls) EXPECT_GE(c, 5) << "round-robin should spread 30 calls over 3 servers";
  EXPECT_EQ(total, 30);
}

TEST(ClientLibrary, RetriesOnUnavailableWhenAReplicaDrains) {
  auto servers = StartThree();
  auto client = ClientFor(servers);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(client->EmbedTexts({"warm up"}).ok());
  // Keep server 1 busy, then stop it: it drains (answering UNAVAILABLE) while still up.
  client::ClientOptions direct;
  direct.addresses = {servers[1]->grpc_address()};
  auto busy_client = client::EmbeddingClient::Connect(direct).value();
  std::string huge;
  for (int i = 0; i < 100000; ++i) huge += "cat ";  // seconds of work on the small model
  auto busy = std::async(std::launch::async, [&] { return busy_client->EmbedTexts({huge}); });
  absl::SleepFor(absl::Milliseconds(300));
  servers[1]->Signal(SIGTERM);
  absl::SleepFor(absl::Milliseconds(200));
  for (int i = 0; i < 30; ++i) {
    auto result = client->EmbedTexts({"during drain " + std::to_string(i)});
    ASSERT_TRUE(result.ok()) << "call " << i << ": " << result.status();
  }
  EXPECT_GT(EmbedCalls(*servers[1], "UNAVAILABLE"), 0) << "some calls met the draining replica";
  EXPECT_TRUE(busy.get().ok());
  EXPECT_EQ(servers[1]->Wait(), 0);
  // With the replica gone for good, calls still succeed on the other two.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client->EmbedTexts({"after"}).ok());
}

TEST(ClientLibrary, ServiceConfigBoundsRetries) {
  client::ClientOptions options;
  options.max_attempts = 3;
  const std::string config = client::ServiceConfigJson(options);
  EXPECT_THAT(config, ::testing::HasSubstr("\"maxAttempts\": 3"));
  EXPECT_THAT(config, ::testing::HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(config, ::testing::HasSubstr("round_robin"));
}

TEST(ClientLibrary, UnreadableTlsFilesAreNamed) {
  client::ClientOptions options;
  options.addresses = {"127.0.0.1:1"};
  options.ca_cert_file = "/nonexistent/ca.pem";
  auto client = client::EmbeddingClient::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr("ca_cert_file"));
}

}  // namespace
}  // namespace embedding
