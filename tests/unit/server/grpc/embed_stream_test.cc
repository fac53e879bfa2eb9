// EmbedStream's flow control in process: a real gRPC server on 127.0.0.1 with the Embedder
// behind a model whose forward passes are held at a gate. A client that sends far more items
// than it reads answers for finds at most kMaxOutstanding of them admitted; the rest wait in
// gRPC's flow control, not in the server. Opened, every item is answered once, and the books
// return to zero. An item the door refuses is answered alone.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "server/core/embedder.h"
#include "server/grpc/embed_stream_reactor.h"
#include "server/grpc/embedding_service.h"
#include "tests/unit/server/core/fixed_models.h"

namespace embedding::server {
namespace {

// Holds every forward pass until opened.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The Embedder behind a real EmbeddingService on 127.0.0.1, and a stub to call it.
class StreamServer {
 public:
  explicit StreamServer(std::function<void()> forward_hook)
      : pool_(2),
        models_(&pool_, absl::ZeroDuration(), std::move(forward_hook)),
        embedder_(RequestLimits{}, &pool_),
        service_(&embedder_, nullptr) {
    embedder_.SetReady(&models_);
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    stub_ = v1::EmbeddingService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                              grpc::InsecureChannelCredentials()));
  }
  ~StreamServer() { server_->Shutdown(); }

  Embedder& embedder() { return embedder_; }
  v1::EmbeddingService::Stub& stub() { return *stub_; }

  // The reactor's OnDone, which reports the call, runs on gRPC's thread after the client's
  // Finish returns; then the books are read.
  void ExpectBooksAtZero() {
    for (int i = 0; i < 500 && embedder_.active_calls() > 0; ++i)
      absl::SleepFor(absl::Milliseconds(10));
    pool_.WaitIdle();
    EXPECT_EQ(embedder_.admission().in_flight_requests(), 0);
    EXPECT_EQ(embedder_.admission().queued_tokens(), 0);
    EXPECT_EQ(embedder_.active_calls(), 0);
  }

 private:
  WorkerPool pool_;
  testing::FixedModels models_;
  Embedder embedder_;
  EmbeddingService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::EmbeddingService::Stub> stub_;
};

TEST(EmbedStream, ReadsPauseAtTheOutstandingBoundAndResume) {
  Gate gate;
  StreamServer server([&gate] { gate.Wait(); });
  Embedder& embedder = server.embedder();
  grpc::ClientContext context;
  auto stream = server.stub().EmbedStream(&context);
  constexpr int kItems = 3 * EmbedStreamReactor::kMaxOutstanding;
  for (int i = 0; i < kItems; ++i) {  // small items: gRPC's window takes them all
    v1::EmbedStreamRequest item;
    item.set_request_id(std::to_string(i));
    item.mutable_request()->add_inputs("the cat sat " + std::to_string(i));
    ASSERT_TRUE(stream->Write(item));
  }
  stream->WritesDone();
  // Give the server every chance to read past its bound.
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(embedder.admission().in_flight_requests(), EmbedStreamReactor::kMaxOutstanding);

  gate.Open();
  std::set<std::string> answered;
  v1::EmbedStreamResponse response;
  while (stream->Read(&response)) {
    EXPECT_TRUE(response.has_response()) << response.error().message();
    EXPECT_TRUE(answered.insert(response.request_id()).second) << "answered twice";
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(answered.size(), static_cast<size_t>(kItems));
  server.ExpectBooksAtZero();
}

// An item whose enum holds a number the .proto does not define is answered under its own id
// with INVALID_ARGUMENT naming the field; the items around it are served.
TEST(EmbedStream, AnItemWithAnUndefinedEnumIsRefusedAlone) {
  StreamServer server(nullptr);
  grpc::ClientContext context;
  auto stream = server.stub().EmbedStream(&context);
  for (const char* id : {"before", "bad", "after"}) {
    v1::EmbedStreamRequest item;
    item.set_request_id(id);
    item.mutable_request()->add_inputs("the cat sat");
    if (std::string(id) == "bad")
      item.mutable_request()->set_strategy(static_cast<v1::LongTextStrategy>(99));
    ASSERT_TRUE(stream->Write(item));
  }
  stream->WritesDone();
  std::map<std::string, v1::EmbedStreamResponse> answers;
  v1::EmbedStreamResponse response;
  while (stream->Read(&response)) answers[response.request_id()] = response;
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(answers["before"].has_response());
  EXPECT_TRUE(answers["after"].has_response());
  ASSERT_TRUE(answers["bad"].has_error());
  EXPECT_EQ(answers["bad"].error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(answers["bad"].error().message().rfind("strategy: unknown value 99; allowed 0..7", 0),
            0u)
      << answers["bad"].error().message();
  server.ExpectBooksAtZero();
}

}  // namespace
}  // namespace embedding::server
