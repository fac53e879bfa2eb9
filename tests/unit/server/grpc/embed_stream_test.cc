// EmbedStream's flow control in process: a real gRPC server on 127.0.0.1 with the Embedder
// behind a model whose forward passes are held at a gate. A client that sends far more items
// than it reads answers for finds at most kMaxOutstanding of them admitted; the rest wait in
// gRPC's flow control, not in the server. Opened, every item is answered once, and the books
// return to zero.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
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

TEST(EmbedStream, ReadsPauseAtTheOutstandingBoundAndResume) {
  WorkerPool pool(2);
  Gate gate;
  testing::FixedModels models(&pool, absl::ZeroDuration(), [&gate] { gate.Wait(); });
  Embedder embedder(RequestLimits{}, &pool);
  embedder.SetReady(&models);
  EmbeddingService service(&embedder, nullptr);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);

  auto stub = v1::EmbeddingService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->EmbedStream(&context);
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
  // The reactor's OnDone, which reports the call, runs on gRPC's thread after the client's
  // Finish returns.
  for (int i = 0; i < 500 && embedder.active_calls() > 0; ++i)
    absl::SleepFor(absl::Milliseconds(10));
  pool.WaitIdle();
  EXPECT_EQ(embedder.admission().in_flight_requests(), 0);
  EXPECT_EQ(embedder.admission().queued_tokens(), 0);
  EXPECT_EQ(embedder.active_calls(), 0);
  server->Shutdown();
}

}  // namespace
}  // namespace embedding::server
