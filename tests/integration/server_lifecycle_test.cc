// Flow control against a real server: overload, deadlines, cancellation, fairness between a
// huge document and a short request, graceful draining on SIGTERM, slow HTTP clients, and
// ports already in use. Uses the "small" demo model, slow enough that a 100,000-token document
// takes seconds.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>

#include "client/embedding_client.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using ::testing::HasSubstr;

std::string Words(int n) {
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(i ? " " : "") + kWords[(i * 7 + i / 3) % 8];
  return out;
}

struct Started {
  std::unique_ptr<testing::ServerProcess> server;
  std::unique_ptr<client::EmbeddingClient> client;
};

Started Start(std::vector<std::string> flags) {
  flags.push_back("--model=small=" + testing::SmallModelDir());
  Started s;
  s.server = std::make_unique<testing::ServerProcess>(flags);
  EXPECT_TRUE(s.server->ok()) << s.server->Log();
  s.client = client::EmbeddingClient::Connect({{s.server->grpc_address()}}).value();
  return s;
}

std::future<absl::StatusOr<v1::EmbedResponse>> EmbedAsync(
    client::EmbeddingClient* client, std::string text,
    absl::Duration timeout = absl::Seconds(120)) {
  return std::async(std::launch::async, [client, text = std::move(text), timeout] {
    return client->Embed(client::MakeEmbedRequest({text}, {}), timeout);
  });
}

// With --max-concurrent-requests=1: the only slot comes back once the dropped request's
// remaining work leaves the queue, long before its 100,000 tokens could have been encoded.
void ExpectSlotReturnedSoon(client::EmbeddingClient* client) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::EmbedResponse> next;
  do {
    next = client->Embed(client::MakeEmbedRequest({"short"}, {}));
  } while (next.status().code() == absl::StatusCode::kResourceExhausted &&
           absl::Now() - start < absl::Seconds(30));
  EXPECT_TRUE(next.ok()) << next.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST(ServerLifecycle, ConcurrencyBoundAnswersResourceExhaustedAtOnce) {
  auto s = Start({"--max-concurrent-requests=1"});
  auto huge = EmbedAsync(s.client.get(), Words(60000));
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  auto refused = s.client->Embed(client::MakeEmbedRequest({"short"}, {}));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "refusal must not wait for capacity";
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-concurrent-requests"));
  EXPECT_TRUE(huge.get().ok());
}

TEST(ServerLifecycle, QueuedTokenBoundAnswersResourceExhausted) {
  auto s = Start({"--max-queued-tokens=5000"});
  auto huge = EmbedAsync(s.client.get(), Words(60000));  // alone in the queue: admitted
  // Until it is queued: tokenising 60,000 words takes longer than any fixed wait under ASan.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (testing::ScrapeMetric(s.server->http_address(), "embedding_queued_tokens") <= 0 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  auto refused = s.client->Embed(client::MakeEmbedRequest({Words(1000)}, {}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-queued-tokens"));
  EXPECT_TRUE(huge.get().ok());
}

TEST(ServerLifecycle, ExpiredDeadlineIsDroppedBeforeTheModel) {
  auto s = Start({"--max-concurrent-requests=1"});
  auto expired =
      s.client->Embed(client::MakeEmbedRequest({Words(100000)}, {}), absl::Milliseconds(200));
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kDeadlineExceeded);
  ExpectSlotReturnedSoon(s.client.get());
}

TEST(ServerLifecycle, CancelledCallIsDropped) {
  auto s = Start({"--max-concurrent-requests=1"});
  grpc::ClientContext context;
  v1::EmbedResponse response;
  auto request = client::MakeEmbedRequest({Words(100000)}, {});
  std::promise<grpc::Status> done;
  s.client->stub().async()->Embed(&context, &request, &response,
                                  [&](grpc::Status status) { done.set_value(status); });
  absl::SleepFor(absl::Milliseconds(300));
  context.TryCancel();
  EXPECT_EQ(done.get_future().get().error_code(), grpc::StatusCode::CANCELLED);
  ExpectSlotReturnedSoon(s.client.get());
}

TEST(ServerLifecycle, ShortRequestIsNotHeldBehindAHugeDocument) {
  auto s = Start({});
  const absl::Time start = absl::Now();
  auto huge = EmbedAsync(s.client.get(), Words(100000));
  absl::SleepFor(absl::Milliseconds(500));
  const absl::Time short_start = absl::Now();
  auto quick = s.client->Embed(client::MakeEmbedRequest({"a short query"}, {}));
  const absl::Duration short_latency = absl::Now() - short_start;
  ASSERT_TRUE(quick.ok()) << quick.status();
  auto long_result = huge.get();
  const absl::Duration huge_latency = absl::Now() - start;
  ASSERT_TRUE(long_result.ok()) << long_result.status();
  EXPECT_EQ(long_result->documents(0).token_count(), 100000u);
  EXPECT_LT(short_latency * 5, huge_latency)
      << "short: " << short_latency << ", huge: " << huge_latency;
}

TEST(ServerLifecycle, SigtermDrainsInFlightWorkAndExitsZero) {
  auto s = Start({"--drain-timeout-s=60"});
  ASSERT_TRUE(s.client->IsServing().value());
  ASSERT_TRUE(s.client->IsServing("embedding.v1.EmbeddingService").value());
  // 100,000 tokens: still in flight when the late call arrives 600 ms in (40,000 finished
  // first on a fast CI host, and the drained server had already gone).
  auto in_flight = EmbedAsync(s.client.get(), Words(100000));
  absl::SleepFor(absl::Milliseconds(400));
  s.server->Signal(SIGTERM);
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(s.client->IsServing().value());
  auto refused = s.client->Embed(client::MakeEmbedRequest({"late"}, {}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("draining"));
  auto accepted = in_flight.get();
  EXPECT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(s.server->Wait(absl::Seconds(30)), 0) << s.server->Log();
}

TEST(ServerLifecycle, ServesSeveralModelsByName) {
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir(),
                                 "--model=small=" + testing::SmallModelDir(),
                                 "--default-model=small"});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  auto models = client->ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->models_size(), 2);
  EXPECT_EQ(models->default_model(), "small");
  client::EmbedOptions tiny;
  tiny.model = "tiny";
  EXPECT_EQ(client->EmbedTexts({"x"}, tiny).value()[0].size(), 96u);
  EXPECT_EQ(client->EmbedTexts({"x"}).value()[0].size(), 256u);

  // A model-store directory serves each model subdirectory under its name.
  const std::string store = testing::MakeScratchDir("store");
  std::filesystem::create_directory_symlink(testing::TinyModelDir(), store + "/alpha");
  std::filesystem::create_directory_symlink(testing::SmallModelDir(), store + "/beta");
  testing::ServerProcess from_store({"--model-store=" + store, "--default-model=beta"});
  ASSERT_TRUE(from_store.ok()) << from_store.Log();
  auto store_client = client::EmbeddingClient::Connect({{from_store.grpc_address()}}).value();
  std::set<std::string> names;
  const v1::ListModelsResponse listed = store_client->ListModels().value();
  for (const auto& m : listed.models()) names.insert(m.name());
  EXPECT_EQ(names, (std::set<std::string>{"alpha", "beta"}));
  EXPECT_EQ(store_client->GetModelInfo("alpha").value().dimensions(), 96u);
}

// --dtype reaches the model: int8 is served (and is not fp32 in disguise), auto logs what it
// measured and serves one of the dtypes it tried; a second start reads that choice back from
// --dtype-cache-dir instead of measuring, and serves the same dtype.
TEST(ServerLifecycle, DTypeFlagChoosesTheEncoder) {
  const std::string cache_dir = ::testing::TempDir() + "/dtype_cache_" + std::to_string(getpid());
  auto embed = [&](const std::string& dtype, std::string* served, std::string* log) {
    testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir(), "--dtype=" + dtype,
                                   "--dtype-cache-dir=" + cache_dir});
    EXPECT_TRUE(server.ok()) << server.Log();
    auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
    *served = client->GetModelInfo("tiny").value().dtype();
    auto response = client->Embed(client::MakeEmbedRequest({Words(300)}, {})).value();
    *log = server.Log();
    const auto& values = response.documents(0).vector();
    return std::vector<float>(values.begin(), values.end());
  };
  std::string served, log;
  const std::vector<float> fp32 = embed("fp32", &served, &log);
  EXPECT_EQ(served, "fp32");
  const std::vector<float> int8 = embed("int8", &served, &log);
  EXPECT_EQ(served, "int8");
  ASSERT_EQ(int8.size(), fp32.size());
  double dot = 0;
  for (size_t i = 0; i < fp32.size(); ++i) dot += fp32[i] * int8[i];
  EXPECT_GE(dot, 0.99);
  EXPECT_LT(dot, 1.0 - 1e-9);
  embed("auto", &served, &log);
  EXPECT_THAT(served, ::testing::AnyOf("fp32", "bf16", "int8"));
  EXPECT_THAT(log, HasSubstr("--dtype=auto tried int8: cosine to fp32"));
  EXPECT_THAT(log, HasSubstr(", " + served + ")"));
  EXPECT_THAT(log, HasSubstr("--dtype=auto chose " + served + " on "));
  EXPECT_THAT(log, HasSubstr("(measured now, cached in " + cache_dir + "/dtype-choices/"));
  const std::string measured = served;
  embed("auto", &served, &log);
  EXPECT_EQ(served, measured);
  EXPECT_THAT(log, HasSubstr("--dtype=auto chose " + served + " on "));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("measured now")));
  EXPECT_THAT(log, HasSubstr("(" + cache_dir + "/dtype-choices/"));
  std::filesystem::remove_all(cache_dir);
}

TEST(ServerLifecycle, BadFlagsAndModelsExitNonZeroNamingTheProblem) {
  testing::ServerProcess bad_flag({"--model=tiny=" + testing::TinyModelDir(), "--dtype=fp64"},
                                  absl::Seconds(20));
  EXPECT_FALSE(bad_flag.ok());
  EXPECT_EQ(bad_flag.Wait(), 2);
  EXPECT_THAT(bad_flag.Log(), HasSubstr("--dtype=fp64"));
  // A CUDA device this build or encoder cannot use: refused at start, not served on the CPU.
  testing::ServerProcess no_cuda({"--model=tiny=" + testing::TinyModelDir(), "--device=cuda"},
                                 absl::Seconds(20));
  EXPECT_FALSE(no_cuda.ok());
  EXPECT_EQ(no_cuda.Wait(), 2);
  EXPECT_THAT(no_cuda.Log(), HasSubstr("--device=cuda: "));
  testing::ServerProcess missing({"--model=gone=/nonexistent/model"}, absl::Seconds(20));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.Wait(), 1);
  EXPECT_THAT(missing.Log(), HasSubstr("model 'gone'"));
}

// A socket to `address` (HOST:PORT) that sent `bytes` and stays open; -1 on failure.
int OpenStalledConnection(const std::string& address, const std::string& bytes) {
  const size_t colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  if (write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return -1;
  return fd;
}

// Slowloris: 20 connections hold half-sent headers. They once took all 8 of httplib's workers
// and /healthz went dark while gRPC was fine (Kubernetes would kill a healthy pod). Probes must
// keep answering, and a body larger than any route takes is refused without buffering it.
TEST(ServerLifecycle, HealthAnswersWhileSlowClientsHoldConnections) {
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir()});
  ASSERT_TRUE(server.ok()) << server.Log();
  std::vector<int> stalled;
  for (int i = 0; i < 20; ++i) {
    stalled.push_back(OpenStalledConnection(server.http_address(), "GET /metrics HTTP/1.1\r\nHo"));
    ASSERT_GE(stalled.back(), 0);
  }
  absl::SleepFor(absl::Milliseconds(200));  // every stalled connection reaches a worker
  const size_t colon = server.http_address().rfind(':');
  httplib::Client http(server.http_address().substr(0, colon),
                       std::stoi(server.http_address().substr(colon + 1)));
  http.set_connection_timeout(1, 0);
  http.set_read_timeout(1, 0);
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    auto response = http.Get(path);
    ASSERT_TRUE(response) << path << " did not answer within 1 s";
    EXPECT_EQ(response->status, 200) << path;
  }
  const long before = server.PeakRssKib();
  auto posted = http.Post("/unknown", std::string(16 << 20, 'x'), "text/plain");
  if (posted) EXPECT_EQ(posted->status, 413);
  EXPECT_LT((server.PeakRssKib() - before) / 1024, 8) << "a refused body was buffered";
  for (int fd : stalled) close(fd);
}

// gRPC and httplib both set SO_REUSEPORT by default: a second server once bound the same ports
// and took half the calls. A port in use is now a start-up error naming the flag.
TEST(ServerLifecycle, APortInUseIsAStartUpError) {
  testing::ServerProcess first({"--model=tiny=" + testing::TinyModelDir()});
  ASSERT_TRUE(first.ok()) << first.Log();
  testing::ServerProcess same_grpc(
      {"--model=tiny=" + testing::TinyModelDir(), "--listen=" + first.grpc_address()},
      absl::Seconds(30));
  EXPECT_FALSE(same_grpc.ok());
  EXPECT_EQ(same_grpc.Wait(), 1);
  EXPECT_THAT(same_grpc.Log(), HasSubstr("--listen=" + first.grpc_address()));
  testing::ServerProcess same_http(
      {"--model=tiny=" + testing::TinyModelDir(), "--http-listen=" + first.http_address()},
      absl::Seconds(30));
  EXPECT_FALSE(same_http.ok());
  EXPECT_EQ(same_http.Wait(), 1);
  EXPECT_THAT(same_http.Log(), HasSubstr("--http-listen=" + first.http_address()));
}

}  // namespace
}  // namespace embedding
