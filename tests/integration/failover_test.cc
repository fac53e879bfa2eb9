// Failover across replicas on loopback: three servers behind the client library's
// round-robin with retries, a bounded load, and during it one server SIGKILLed and another
// SIGTERMed (it drains). No request may fail or come back wrong, and the drained server must
// exit cleanly. Prints error counts and latency per phase (the figures the README quotes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "absl/time/clock.h"
#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

std::string Text(int i) {
  static const char* kWords[] = {"river", "stone", "light", "north", "paper", "glass", "field"};
  std::string out;
  for (int w = 0; w < 200 + 37 * i; ++w) out += std::string(w ? " " : "") + kWords[(w * 3 + i) % 7];
  return out;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1)];
}

TEST(Failover, KilledAndDrainedReplicasLoseNoRequest) {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  client::ClientOptions options;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<testing::ServerProcess>(
        std::vector<std::string>{"--model=small=" + testing::SmallModelDir(), "--threads=1",
                                 "--drain_timeout_s=20"}));
    ASSERT_TRUE(servers.back()->ok()) << servers.back()->Log();
    options.addresses.push_back(servers.back()->grpc_address());
  }
  options.timeout = absl::Seconds(30);
  options.max_attempts = 5;
  auto client = client::EmbeddingClient::Connect(options).value();

  // What each text must come back as (every replica serves the same model).
  constexpr int kTexts = 6;
  std::vector<std::vector<float>> expected;
  for (int i = 0; i < kTexts; ++i) expected.push_back(client->EmbedTexts({Text(i)}).value()[0]);

  constexpr int kRequests = 240, kThreads = 6;
  enum Phase { kAllUp, kOneKilled, kOneDraining };
  std::atomic<int> next{0}, finished{0};
  std::mutex mu;
  std::map<int, std::vector<double>> latencies;  // phase -> seconds
  std::map<std::string, int> errors;
  int wrong = 0;
  std::atomic<int> phase{kAllUp};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i; (i = next++) < kRequests;) {
        const int started_in = phase.load();
        const absl::Time start = absl::Now();
        auto vectors = client->EmbedTexts({Text(i % kTexts)});
        const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
        std::lock_guard<std::mutex> lock(mu);
        if (!vectors.ok()) {
          ++errors[absl::StatusCodeToString(vectors.status().code())];
        } else {
          float worst = 0;
          for (size_t d = 0; d < expected[i % kTexts].size(); ++d)
            worst = std::max(worst, std::abs((*vectors)[0][d] - expected[i % kTexts][d]));
          if (worst > 1e-4) ++wrong;
          latencies[started_in].push_back(seconds);
        }
        ++finished;
      }
    });
  }
  while (finished < kRequests / 3) absl::SleepFor(absl::Milliseconds(5));
  servers[0]->Signal(SIGKILL);
  phase = kOneKilled;
  while (finished < 2 * kRequests / 3) absl::SleepFor(absl::Milliseconds(5));
  servers[1]->Signal(SIGTERM);
  phase = kOneDraining;
  for (auto& t : threads) t.join();

  EXPECT_EQ(servers[1]->Wait(absl::Seconds(30)), 0) << "the drained server\n" << servers[1]->Log();
  EXPECT_EQ(servers[0]->Wait(absl::Seconds(5)), 128 + SIGKILL);
  EXPECT_TRUE(errors.empty()) << errors.size() << " kinds of error, first "
                              << errors.begin()->first << " x" << errors.begin()->second;
  EXPECT_EQ(wrong, 0);
  const char* names[] = {"all three up", "one SIGKILLed", "one draining (SIGTERM)"};
  for (const auto& [p, seconds] : latencies) {
    std::printf("failover: %-24s %3zu requests, p50 %.3f s, p99 %.3f s, max %.3f s\n", names[p],
                seconds.size(), Percentile(seconds, 0.5), Percentile(seconds, 0.99),
                Percentile(seconds, 1.0));
  }
  int total_errors = 0;
  for (const auto& [code, count] : errors) total_errors += count;
  std::printf("failover: %d errors, %d wrong answers in %d requests\n", total_errors, wrong,
              kRequests);
}

}  // namespace
}  // namespace embedding
