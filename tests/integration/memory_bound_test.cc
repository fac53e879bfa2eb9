// Memory is bounded by the window, not the document: late chunking a 130,000-token document
// keeps per-chunk sums, never every window's token states (which alone would be ~100 MiB on
// the tiny model, and 25x that at BERT-base width); and one full 8,192-token window never
// builds full attention scores.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

// The process's peak resident set (VmHWM), in KiB.
long PeakRssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> value;
      break;
    }
  }
  return value;
}

TEST(MemoryBound, LateChunkingALongDocumentKeepsNoTokenStates) {
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir()});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string document;
  for (int i = 0; i < 130000; ++i) document += std::string(i ? " " : "") + kWords[(i * 7) % 8];
  client::EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  ASSERT_TRUE(client->Embed(client::MakeEmbedRequest({"warm up"}, options)).ok());
  const long before = PeakRssKib(server.pid());
  auto response = client->Embed(client::MakeEmbedRequest({document}, options));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->documents(0).token_count(), 130000u);
  const long grown_mib = (PeakRssKib(server.pid()) - before) / 1024;
  // Measured: 38 MiB (text, ids, one batch's activations); 143 MiB when every window's
  // states were kept until the end.
  EXPECT_LT(grown_mib, 80) << "peak RSS grew by " << grown_mib << " MiB";
}

// One request filling an 8,192-token window (the NomicBert test model: 2 layers, 64 wide, 4
// heads). Attention runs in blocks of queries: full scores would be 4 heads x 8,192^2 x 4 bytes
// = 1 GiB per layer, the blocks 4 MiB. The README states the bound.
TEST(MemoryBound, OneFullEightThousandTokenWindowStaysWithinItsBound) {
  testing::ServerProcess server({"--model=nomic=" + testing::NomicBertModelDir()});
  ASSERT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string document;
  for (int i = 0; i < 8190; ++i) document += std::string(i ? " " : "") + kWords[(i * 5) % 8];
  client::EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  ASSERT_TRUE(client->Embed(client::MakeEmbedRequest({"warm up"}, options)).ok());
  const long before = PeakRssKib(server.pid());
  auto response = client->Embed(client::MakeEmbedRequest({document}, options));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->documents(0).token_count(), 8190u);
  EXPECT_EQ(response->usage().sequences(), 1u);  // one window, one forward
  const long grown_mib = (PeakRssKib(server.pid()) - before) / 1024;
  // Measured: 47-53 MiB.
  EXPECT_LT(grown_mib, 96) << "peak RSS grew by " << grown_mib << " MiB";
}

}  // namespace
}  // namespace embedding
