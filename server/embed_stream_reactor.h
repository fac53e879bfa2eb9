// EmbedStream: many Embed requests over one bidirectional stream. Each response goes out as
// soon as its request is done, tagged with the client's request id. At most
// kMaxOutstanding requests run at once per stream; past that the reactor stops reading
// (gRPC flow control pushes back on the client) instead of refusing work.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "server/embedding_service.h"

namespace embedding::server {

class EmbedStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  static constexpr int kMaxOutstanding = 64;

  EmbedStreamReactor(EmbeddingService* service, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Queues a response and starts writing if idle. Requires mu_.
  void EnqueueLocked(const v1::EmbedStreamResponse& response);
  // Finishes once reading ended, no request is outstanding and every write is out.
  void MaybeFinishLocked();
  void OnJobDone(const std::string& request_id, const grpc::Status& status,
                 v1::EmbedResponse response);

  EmbeddingService* const service_;
  grpc::CallbackServerContext* const context_;
  const absl::Time started_;
  grpc::ByteBuffer request_;

  std::mutex mu_;
  std::deque<grpc::ByteBuffer> writes_;          // front is in flight while writing_
  std::vector<std::shared_ptr<EmbedJob>> jobs_;  // for cancellation
  int outstanding_ = 0;
  bool writing_ = false;
  bool write_failed_ = false;
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool finished_ = false;
};

}  // namespace embedding::server
