// Memory is bounded by the window, not the document: late chunking a 130,000-token document
// keeps per-chunk sums, never every window's token states (which alone would be ~100 MiB on
// the tiny model, and 25x that at BERT-base width); and one full 8,192-token window never
// builds full attention scores. And a text too long to serve is refused before it costs more
// than a copy of itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
constexpr bool kSanitizerBuild = true;  // the server runs on ASan's allocator
#else
constexpr bool kSanitizerBuild = false;
#endif

namespace embedding {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A document of `words` words, each one token in the test vocabularies.
std::string Words(int words) {
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string document;
  for (int i = 0; i < words; ++i) document += std::string(i ? " " : "") + kWords[(i * 7) % 8];
  return document;
}

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
  const std::string document = Words(words);
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

// The allocator gives back what forward passes freed. On glibc's malloc every new batch shape
// left its freed tensors in the heap (a BERT-base fp32 server idled at 1,371 MiB after 25
// document lengths, against 625 before them); the server links tcmalloc (CMakeLists.txt).
TEST(MemoryBound, ManyBatchShapesLeaveNoFreedMemoryBehind) {
  testing::ServerProcess server({"--model=m=" + testing::SmallModelDir()});
  ASSERT_TRUE(server.ok()) << server.Log();
  if (!kSanitizerBuild) {
    std::ifstream maps("/proc/" + std::to_string(server.pid()) + "/maps");
    std::stringstream mapped;
    mapped << maps.rdbuf();
    EXPECT_NE(mapped.str().find("libtcmalloc"), std::string::npos) << "not linked to tcmalloc";
  }
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  auto embed_every_length = [&] {
    for (int words = 10; words <= 490; words += 20) {
      auto response = client->Embed(client::MakeEmbedRequest({Words(words)}, {}));
      ASSERT_TRUE(response.ok()) << response.status();
      ASSERT_EQ(response->documents(0).token_count(), static_cast<uint32_t>(words));
    }
  };
  const long idle = server.RssKib();
  embed_every_length();
  const long first_round = server.RssKib();
  embed_every_length();
  const long second_round = server.RssKib();
  // Measured: 23-24 MiB the first round (kernels compiled for new shapes, the allocator's
  // caches), 0 the second, or one tcmalloc thread cache (at most 4 MiB each) when a worker
  // first busy in the second round fills its own: +4,108 KiB in 2 of 6 runs on a loaded host.
  // glibc's heap kept hundreds of MiB here.
  EXPECT_LT((first_round - idle) / 1024, 48) << "idle " << idle << " KiB, then " << first_round;
  EXPECT_LT((second_round - first_round) / 1024, 8) << first_round << " KiB, then " << second_round;
}

// A text past its byte bound (16 bytes for each token --max-tokens-per-document allows: 2 MiB
// by default) is refused before it is tokenized, on every door. A 16 MiB Tokenize once grew the
// server by 448 MiB, tokenizing the whole text before counting its tokens against the limit;
// now it costs the request's own copies.
TEST(MemoryBound, SixteenMebibyteTextsAreRefusedBeforeTokenizing) {
  testing::ServerProcess server(
      {"--model=tiny=" + testing::TinyModelDir(), "--openai-listen=127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.Log();
  std::string text;
  while (text.size() < (16u << 20)) text += "word ";
  text.resize(16u << 20);
  auto client = client::EmbeddingClient::Connect({{server.grpc_address()}}).value();
  const long before = server.PeakRssKib();
  const auto refused =
      AllOf(HasSubstr("inputs[0]: 16777216 bytes of text exceed the bound"),
            HasSubstr("allowed [0, 2097152]"), HasSubstr("--max-tokens-per-document"));
  v1::TokenizeRequest tokenize;
  tokenize.add_inputs(text);
  auto tokens = client->Tokenize(tokenize);
  ASSERT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument) << tokens.status();
  EXPECT_THAT(tokens.status().message(), refused);
  v1::EmbedRequest embed;
  embed.add_inputs(text);
  embed.set_strategy(v1::LONG_TEXT_STRATEGY_CHUNK_MEAN);
  const absl::Status embedded = client->Embed(embed).status();
  EXPECT_EQ(embedded.code(), absl::StatusCode::kInvalidArgument) << embedded;
  EXPECT_THAT(embedded.message(), refused);

  const size_t colon = server.api_address().rfind(':');
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(server.api_address().substr(colon + 1), &port));
  httplib::Client http(server.api_address().substr(0, colon), port);
  http.set_read_timeout(60);
  // The HTTP doors refuse the string before parsing the body (the parser would hold several
  // copies of it), naming the key it sits under; a refused body is TEI's 422.
  for (const auto& [path, body, status, field] :
       {std::tuple{"/tokenize", "{\"inputs\": [\"" + text + "\"]}", 422, "\"inputs: a string"},
        std::tuple{"/embed", "{\"inputs\": \"" + text + "\"}", 422, "\"inputs: a string"},
        std::tuple{"/v1/embeddings", "{\"model\": \"tiny\", \"input\": \"" + text + "\"}", 400,
                   "\"input: a string"}}) {
    auto answer = http.Post(path, body, "application/json");
    ASSERT_TRUE(answer) << path;
    EXPECT_EQ(answer->status, status) << path << ": " << answer->body;
    EXPECT_THAT(answer->body.substr(0, 400),
                AllOf(HasSubstr(field), HasSubstr("16777216 bytes exceeds the bound"),
                      HasSubstr("allowed [0, 2097152]"), HasSubstr("--max-tokens-per-document")))
        << path;
  }
  const long grown_mib = (server.PeakRssKib() - before) / 1024;
  if (!kSanitizerBuild) EXPECT_LE(grown_mib, 64) << "peak RSS grew by " << grown_mib << " MiB";
}

}  // namespace
}  // namespace embedding
