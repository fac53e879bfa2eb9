// Defects of the request path, each driven through a real server: queued tokens and request
// slots return to zero after cancellations and deadlines at every stage; EmbedStream stops
// computing for a client that never reads; timed-out calls are counted as timed out; names of
// 128 bytes or more travel intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <random>
#include <thread>

#include "client/embedding_client.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using ::testing::HasSubstr;

std::string Words(int n, int seed = 0) {
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(i ? " " : "") + kWords[(i * 7 + seed) % 8];
  return out;
}

struct Started {
  std::unique_ptr<testing::ServerProcess> server;
  std::unique_ptr<client::EmbeddingClient> client;
};

Started Start(const std::string& model_dir, std::vector<std::string> flags = {}) {
  flags.push_back("--model=m=" + model_dir);
  Started s;
  s.server = std::make_unique<testing::ServerProcess>(flags);
  EXPECT_TRUE(s.server->ok()) << s.server->Log();
  s.client = client::EmbeddingClient::Connect({{s.server->grpc_address()}}).value();
  return s;
}

// Calls ended by deadlines of 5-95 ms (queued, tokenising) and by cancellations after
// 0-2,000 ms (planned, batched, encoding) must give back every slot and token.
TEST(RequestPath, QueuedTokensAndSlotsReturnToZeroAfterCancellationsAndDeadlines) {
  auto s = Start(testing::SmallModelDir());
  const auto request = client::MakeEmbedRequest({Words(120000)}, {});
  struct Call {
    grpc::ClientContext context;
    v1::EmbedResponse response;
    std::promise<grpc::Status> done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) {
    auto call = std::make_unique<Call>();
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(5 + rng() % 91));
    s.client->stub().async()->Embed(&call->context, &request, &call->response,
                                    [c = call.get()](grpc::Status st) { c->done.set_value(st); });
    calls.push_back(std::move(call));
  }
  std::vector<std::thread> cancellers;
  for (int i = 0; i < 20; ++i) {
    auto call = std::make_unique<Call>();
    s.client->stub().async()->Embed(&call->context, &request, &call->response,
                                    [c = call.get()](grpc::Status st) { c->done.set_value(st); });
    cancellers.emplace_back([c = call.get(), delay = rng() % 2000] {
      absl::SleepFor(absl::Milliseconds(delay));
      c->context.TryCancel();
    });
    calls.push_back(std::move(call));
  }
  for (auto& t : cancellers) t.join();
  for (auto& call : calls) {
    const auto code = call->done.get_future().get().error_code();
    EXPECT_THAT(code,
                ::testing::AnyOf(grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::CANCELLED,
                                 grpc::StatusCode::RESOURCE_EXHAUSTED));
  }
  testing::ExpectAccountingReturnsToZero(s.server->http_address());
  EXPECT_EQ(testing::HttpStatus(s.server->http_address(), "/readyz"), 200);
  // The whole queue is free again: a request of most of --max-queued-tokens is admitted.
  auto big = s.client->Embed(client::MakeEmbedRequest({Words(3000)}, {}));
  EXPECT_TRUE(big.ok()) << big.status();
  testing::ExpectAccountingReturnsToZero(s.server->http_address());
}

// A client that writes requests and never reads: the server computes at most what the
// stream's outstanding bound and the transport's flow-control window hold, not everything
// it was sent.
TEST(RequestPath, StreamStopsComputingForAClientThatNeverReads) {
  auto s = Start(testing::TinyModelDir());
  v1::EmbedStreamRequest item;
  *item.mutable_request() = client::MakeEmbedRequest({Words(20)}, {});
  constexpr int kSent = 40000;
  grpc::ClientContext context;
  auto stream = s.client->stub().EmbedStream(&context);
  std::thread writer([&] {
    for (int i = 0; i < kSent; ++i) {
      item.set_request_id(std::to_string(i));
      if (!stream->Write(item)) return;  // blocks once the server stops reading
    }
  });
  // Once the transport's buffers are full of answers (about 4 MB here, some 8,500 answers),
  // computing must stop: the count of finished documents settles well short of everything
  // sent. Before the fix it climbed until all of them were computed.
  auto computed = [&] {
    return testing::ScrapeMetric(s.server->http_address(), "embedding_documents_total\\{[^}]*\\}");
  };
  double settled = -1;
  const absl::Time give_up = absl::Now() + absl::Seconds(90);
  for (double now = computed(); now != settled && absl::Now() < give_up; now = computed()) {
    settled = now;
    absl::SleepFor(absl::Seconds(3));
  }
  EXPECT_GT(settled, 0);
  EXPECT_LE(settled, kSent / 2) << "the server kept computing answers nobody reads";
  context.TryCancel();
  writer.join();
  testing::ExpectAccountingReturnsToZero(s.server->http_address());
}

// Calls that time out are counted as DEADLINE_EXCEEDED (or OK when they made it), never as
// the client's fault.
TEST(RequestPath, TimedOutCallsAreCountedAsTimedOut) {
  auto s = Start(testing::TinyModelDir());
  constexpr int kCalls = 300;
  std::vector<std::future<absl::StatusOr<v1::EmbedResponse>>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      return s.client->Embed(client::MakeEmbedRequest({Words(50 + i % 400, i)}, {}),
                             absl::Milliseconds(1 + i % 30));
    }));
  }
  int timed_out = 0;
  for (auto& call : calls) {
    auto result = call.get();
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
      ++timed_out;
    }
  }
  EXPECT_GT(timed_out, 0);
  const std::string& http = s.server->http_address();
  auto count = [&](const std::string& code) {
    return testing::ScrapeMetric(
        http, "embedding_requests_total\\{code=\"" + code + "\",method=\"Embed\"\\}");
  };
  // Every call the server saw ends under a code that is not the client's fault (calls whose
  // deadline passed before they were sent never reach it). RESOURCE_EXHAUSTED: refused at
  // once, with the answer still on its way when time ran out.
  auto seen_now = [&] {
    return count("OK") + count("DEADLINE_EXCEEDED") + count("CANCELLED") +
           count("RESOURCE_EXHAUSTED") + count("INVALID_ARGUMENT");
  };
  double seen = -1;
  for (double now = seen_now(); now != seen; now = seen_now()) {  // until the count settles
    seen = now;
    absl::SleepFor(absl::Milliseconds(500));
  }
  // The server may finish a call before noticing the client gave up; it must never blame
  // the request.
  EXPECT_EQ(count("INVALID_ARGUMENT"), 0);
  EXPECT_GT(seen, 0);
  EXPECT_LE(seen, kCalls);
  testing::ExpectAccountingReturnsToZero(s.server->http_address());
}

// Names of 128 bytes or more need a multi-byte length on the wire.
TEST(RequestPath, LongModelAndServiceNamesTravelIntact) {
  auto s = Start(testing::TinyModelDir());
  const std::string long_service(200, 's');
  auto health = s.client->IsServing(long_service);
  EXPECT_EQ(health.status().code(), absl::StatusCode::kNotFound) << health.status();
  const std::string long_model(300, 'm');
  auto info = s.client->GetModelInfo(long_model);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(info.status().message(), HasSubstr("model: '" + long_model + "'"));
  auto request = client::MakeEmbedRequest({"text"}, {});
  request.set_model(long_model);
  auto embedded = s.client->Embed(request);
  EXPECT_EQ(embedded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(embedded.status().message(), HasSubstr(long_model));
  EXPECT_TRUE(s.client->IsServing().value());
}

}  // namespace
}  // namespace embedding
