// Memory is bounded by the window, not the document: late chunking a 130,000-token document
// keeps per-chunk sums, never every window's token states (which alone would be ~100 MiB on
// the tiny model, and 25x that at BERT-base width); and one full 8,192-token window never
// builds full attention scores.
#include <gtest/gtest.h>

#include <string>

#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

struct Growth {
  v1::EmbedResponse response;
  long peak_growth_mib = -1;
};

// Serves `model_dir`, late-chunks one document of `words` single-token words after a warm-up,
// and measures the server's peak resident growth over that one request.
Growth LateChunkOneDocument(const std::string& model_dir, int words) {
  testing::ServerProcess server({"--model=m=" + model_dir});
  EXPECT_TRUE(server.ok()) << server.Log();
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string document;
  for (int i = 0; i < words; ++i) document += std::string(i ? " " : "") + kWords[(i * 7) % 8];
  client::EmbedOptions options;
  options.strategy = v1::LONG_TEXT_STRATEGY_LATE_CHUNKING;
  EXPECT_TRUE(client->Embed(client::MakeEmbedRequest({"warm up"}, options)).ok());
  const long before = server.PeakRssKib();
  auto response = client->Embed(client::MakeEmbedRequest({document}, options));
  EXPECT_TRUE(response.ok()) << response.status();
  Growth growth;
  if (response.ok()) growth.response = *std::move(response);
  growth.peak_growth_mib = (server.PeakRssKib() - before) / 1024;
  return growth;
}

TEST(MemoryBound, LateChunkingALongDocumentKeepsNoTokenStates) {
  const Growth growth = LateChunkOneDocument(testing::TinyModelDir(), 130000);
  EXPECT_EQ(growth.response.documents(0).token_count(), 130000u);
  // Measured: 38 MiB (text, ids, one batch's activations); 143 MiB when every window's
  // states were kept until the end.
  EXPECT_LT(growth.peak_growth_mib, 80) << "peak RSS grew by " << growth.peak_growth_mib;
}

// One request filling an 8,192-token window (the NomicBert test model: 2 layers, 64 wide, 4
// heads). Attention runs in blocks of queries: full scores would be 4 heads x 8,192^2 x 4 bytes
// = 1 GiB per layer, the blocks 4 MiB. The README states the bound.
TEST(MemoryBound, OneFullEightThousandTokenWindowStaysWithinItsBound) {
  const Growth growth = LateChunkOneDocument(testing::NomicBertModelDir(), 8190);
  EXPECT_EQ(growth.response.documents(0).token_count(), 8190u);
  EXPECT_EQ(growth.response.usage().sequences(), 1u);  // one window, one forward
  // Measured: 47-53 MiB.
  EXPECT_LT(growth.peak_growth_mib, 96) << "peak RSS grew by " << growth.peak_growth_mib;
}

}  // namespace
}  // namespace embedding
