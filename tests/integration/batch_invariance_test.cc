// Same text, same vector: probe texts embedded alone, then among random neighbours (lengths,
// temperatures, strategies, equal-length batches, positions) sent concurrently so the batcher
// packs them into shared forward passes, through a real server in each compute dtype. The
// vectors must be bit-identical (the README's guarantee per dtype), and ModelInfo reports the
// bound the model measured at load: 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "client/embedding_client.h"
#include "model_store/kernels/cpu_features.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using client::EmbedOptions;

struct Probe {
  std::string text;
  EmbedOptions options;
};

// Short and long, one window and several chunks, each strategy that returns one vector.
std::vector<Probe> Probes() {
  std::vector<Probe> probes;
  auto add = [&](int words, uint32_t seed, float tau, v1::LongTextStrategy strategy) {
    Probe probe{testing::SingleTokenWords(words, seed), {}};
    probe.options.temperature = tau;
    probe.options.strategy = strategy;
    probe.options.chunk_tokens = 96;
    probes.push_back(std::move(probe));
  };
  add(3, 1, 1.0f, v1::LONG_TEXT_STRATEGY_TRUNCATE);
  add(40, 2, 0.5f, v1::LONG_TEXT_STRATEGY_CHUNK_MEAN);
  add(90, 3, 1.0f, v1::LONG_TEXT_STRATEGY_TRUNCATE);
  add(300, 4, 0.7f, v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN);
  add(500, 5, 1.3f, v1::LONG_TEXT_STRATEGY_CHUNK_MAX);
  add(400, 6, 0.6f, v1::LONG_TEXT_STRATEGY_LATE_CHUNKING);
  return probes;
}

// The largest |a - b| over two documents' vectors; infinity when their sizes differ.
double MaxDifference(const v1::DocumentEmbedding& a, const v1::DocumentEmbedding& b) {
  if (a.vector_size() != b.vector_size()) return INFINITY;
  double worst = 0;
  for (int i = 0; i < a.vector_size(); ++i)
    worst = std::max<double>(worst, std::fabs(a.vector(i) - b.vector(i)));
  return worst;
}

class BatchInvarianceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchInvarianceTest, AProbesVectorDoesNotDependOnItsBatch) {
  const std::string dtype = GetParam();
  if (dtype == "bf16" && !model_store::CpuHasNativeBf16()) {
    GTEST_SKIP() << "bf16 needs avx512_bf16 or amx_bf16; this CPU: " << model_store::CpuIsa();
  }
  // A queue delay lets concurrent requests meet in one forward pass; 8,192 tokens per batch
  // lets a batch pass 4,096 rows, where layers project one head at a time (each probe alone
  // takes the whole projection; EncoderHeadByHead checks that switch in process).
  testing::ServerProcess server({"--model=m=" + testing::SmallModelDir(), "--dtype=" + dtype,
                                 "--max-queue-delay-ms=30", "--max-batch-tokens=8192"});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();

  const std::vector<Probe> probes = Probes();
  std::vector<v1::DocumentEmbedding> alone;
  for (const Probe& probe : probes) {
    auto response = client->Embed(client::MakeEmbedRequest({probe.text}, probe.options));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->dtype(), dtype);
    alone.push_back(response->documents(0));
  }

  std::mt19937 rng(35);
  const v1::LongTextStrategy kStrategies[] = {
      v1::LONG_TEXT_STRATEGY_TRUNCATE, v1::LONG_TEXT_STRATEGY_CHUNK_MEAN,
      v1::LONG_TEXT_STRATEGY_CHUNK_MAX, v1::LONG_TEXT_STRATEGY_CHUNK_ALL,
      v1::LONG_TEXT_STRATEGY_LATE_CHUNKING};
  double worst = 0;
  int compared = 0;
  for (int round = 0; round < 8; ++round) {
    // Every probe rides in a request of its own options with neighbours before and after
    // it; beside it run requests of random documents at other temperatures and strategies.
    // Even rounds give the neighbours the probe's own length (an equal-length batch).
    const bool equal_lengths = round % 2 == 0;
    std::vector<std::future<absl::StatusOr<v1::EmbedResponse>>> calls;
    std::vector<std::pair<size_t, int>> probe_at;  // (probe, document index) per probe call
    for (size_t p = 0; p < probes.size(); ++p) {
      const int words =
          1 + static_cast<int>(std::count(probes[p].text.begin(), probes[p].text.end(), ' '));
      std::vector<std::string> texts;
      const int before = static_cast<int>(rng() % 4), after = static_cast<int>(rng() % 3);
      for (int i = 0; i < before + after; ++i) {
        const int n = equal_lengths ? words : 1 + static_cast<int>(rng() % 600);
        texts.push_back(testing::SingleTokenWords(n, rng()));
      }
      texts.insert(texts.begin() + before, probes[p].text);
      probe_at.emplace_back(p, before);
      calls.push_back(std::async(std::launch::async, [&client, texts, &probes, p] {
        return client->Embed(client::MakeEmbedRequest(texts, probes[p].options));
      }));
    }
    for (int n = 0; n < 6; ++n) {
      EmbedOptions options;
      options.temperature = 0.3f + 0.1f * static_cast<float>(rng() % 13);
      options.strategy = kStrategies[rng() % 5];
      options.chunk_tokens = 64 + static_cast<uint32_t>(rng() % 200);
      std::vector<std::string> texts;
      for (int d = 1 + static_cast<int>(rng() % 3); d > 0; --d)
        texts.push_back(testing::SingleTokenWords(1 + static_cast<int>(rng() % 700), rng()));
      calls.push_back(std::async(std::launch::async, [&client, texts, options] {
        return client->Embed(client::MakeEmbedRequest(texts, options));
      }));
    }
    for (size_t c = 0; c < calls.size(); ++c) {
      auto response = calls[c].get();
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->dtype(), dtype);
      if (c >= probe_at.size()) continue;
      const auto [p, index] = probe_at[c];
      const double difference = MaxDifference(alone[p], response->documents(index));
      worst = std::max(worst, difference);
      ++compared;
      EXPECT_EQ(difference, 0) << dtype << ": probe " << p << " in round " << round;
    }
  }
  EXPECT_EQ(compared, 8 * static_cast<int>(probes.size()));
  // The rounds did share forward passes: more sequences than batches.
  const double sequences = testing::ScrapeMetric(
      server.http_address(), "embedding_batch_sequences_sum\\{.*model=\"m\".*\\}");
  const double batches = testing::ScrapeMetric(
      server.http_address(), "embedding_batch_sequences_count\\{.*model=\"m\".*\\}");
  EXPECT_GT(sequences, 2 * batches) << sequences << " sequences in " << batches << " batches";
  // Measured at load, on the inference thread, in this dtype: the CPU's kernels are
  // bit-identical, and those passes at load no longer move later vectors (docs/operating.md,
  // "bf16 and the thread that encodes").
  auto info = client->GetModelInfo("m");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_TRUE(info->has_batch_invariance_bound());
  EXPECT_EQ(info->batch_invariance_bound(), 0.0f);
  std::cout << dtype << " on " << model_store::CpuIsa() << ": worst |alone - batched| " << worst
            << " over " << compared << " probe vectors, " << sequences / batches
            << " sequences per forward pass\n";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchInvarianceTest, ::testing::Values("fp32", "bf16", "int8"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace embedding
