// EmbedStream: many Embed requests over one bidirectional stream. Each response goes out as
// soon as its request is done, tagged with the client's request id. At most kMaxOutstanding
// items per stream are between being read and being written out (running, or answered and
// waiting for the client to read); past that the reactor stops reading, so gRPC flow control
// pushes back on a client that sends faster than it reads, instead of the server buffering.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "absl/time/time.h"
#include "embedding/v1/embedding.pb.h"
#include "server/core/embedder.h"

namespace embedding::server {

class EmbedStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  static constexpr int kMaxOutstanding = 64;

  // `embedder` must outlive the reactor, which owns itself (deleted in OnDone).
  EmbedStreamReactor(Embedder* embedder, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Queues a response and starts writing if idle. Requires mu_.
  void EnqueueLocked(const v1::EmbedStreamResponse& response);
  // One item fewer outstanding: resumes reading if it was paused, finishes if all is done.
  // Requires mu_.
  void ItemDoneLocked();
  // Finishes once reading ended, nothing is outstanding and every write is out.
  void MaybeFinishLocked();
  void OnJobDone(uint64_t key, const std::string& request_id,
                 const absl::StatusOr<EmbedAnswer>& answer);

  Embedder* const embedder_;
  grpc::CallbackServerContext* const context_;
  const std::string request_id_;
  const absl::Time started_;
  grpc::ByteBuffer request_;

  std::mutex mu_;
  std::deque<grpc::ByteBuffer> writes_;                 // front is in flight while writing_
  std::map<uint64_t, std::shared_ptr<EmbedJob>> jobs_;  // running, for cancellation
  uint64_t next_key_ = 0;
  int outstanding_ = 0;  // items read and not yet written (or dropped)
  bool writing_ = false;
  bool write_failed_ = false;
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool finished_ = false;
};

}  // namespace embedding::server
