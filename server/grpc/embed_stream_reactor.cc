#include "server/grpc/embed_stream_reactor.h"

#include "server/grpc/call_context.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/status_mapping.h"

namespace embedding::server {
namespace {

v1::EmbedStreamResponse ErrorItem(const std::string& request_id, const grpc::Status& status) {
  v1::EmbedStreamResponse item;
  item.set_request_id(request_id);
  item.mutable_error()->set_code(status.error_code());
  item.mutable_error()->set_message(status.error_message());
  return item;
}

}  // namespace

EmbedStreamReactor::EmbedStreamReactor(Embedder* embedder, grpc::CallbackServerContext* context)
    : embedder_(embedder),
      context_(context),
      request_id_(AcceptRequestId(context)),
      started_(absl::Now()) {
  embedder_->CallStarted();
  StartRead(&request_);
}

void EmbedStreamReactor::OnReadDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {  // the client half-closed, or the call is over
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  ++outstanding_;
  v1::EmbedStreamRequest item;
  const absl::Status parsed =
      ParseRequest(request_, &item, embedder_->limits().max_inputs_per_request);
  const std::string id = parsed.ok() ? item.request_id() : StreamRequestId(request_);
  const uint64_t key = next_key_++;
  absl::StatusOr<EmbedCall> call = parsed.ok()
                                       ? ToEmbedCall(item.mutable_request(), CallDeadline(context_))
                                       : absl::StatusOr<EmbedCall>(parsed);
  auto job = call.ok() ? embedder_->StartEmbed(*std::move(call),
                                               [this, key, id](absl::StatusOr<EmbedAnswer> answer) {
                                                 OnJobDone(key, id, answer);
                                               })
                       : absl::StatusOr<std::shared_ptr<EmbedJob>>(call.status());
  if (job.ok()) {
    jobs_[key] = *std::move(job);
  } else {
    EnqueueLocked(ErrorItem(id, ToGrpcStatus(job.status())));
  }
  if (outstanding_ < kMaxOutstanding) {
    StartRead(&request_);
  } else {
    read_paused_ = true;
  }
}

void EmbedStreamReactor::OnJobDone(uint64_t key, const std::string& request_id,
                                   const absl::StatusOr<EmbedAnswer>& answer) {
  v1::EmbedStreamResponse out;
  if (answer.ok()) {
    out.set_request_id(request_id);
    FillEmbedResponse(*answer, out.mutable_response());
  } else {
    out = ErrorItem(request_id, ToGrpcStatus(answer.status()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(key);
  EnqueueLocked(out);
}

void EmbedStreamReactor::EnqueueLocked(const v1::EmbedStreamResponse& response) {
  if (write_failed_) {  // the client is gone; nobody will read it
    ItemDoneLocked();
    return;
  }
  writes_.emplace_back();
  SerializeResponse(response, &writes_.back());
  if (!writing_) {
    writing_ = true;
    StartWrite(&writes_.front());
  }
}

void EmbedStreamReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writes_.pop_front();
  ItemDoneLocked();
  if (!ok) {
    write_failed_ = true;
    while (!writes_.empty()) {
      writes_.pop_front();
      ItemDoneLocked();
    }
  }
  if (!writes_.empty()) {
    StartWrite(&writes_.front());
  } else {
    writing_ = false;
  }
  MaybeFinishLocked();
}

void EmbedStreamReactor::ItemDoneLocked() {
  --outstanding_;
  if (read_paused_ && !reads_done_ && outstanding_ < kMaxOutstanding) {
    read_paused_ = false;
    StartRead(&request_);
  }
  MaybeFinishLocked();
}

void EmbedStreamReactor::MaybeFinishLocked() {
  if (finished_ || !reads_done_ || outstanding_ > 0 || writing_) return;
  finished_ = true;
  Finish(write_failed_ ? grpc::Status(grpc::StatusCode::CANCELLED, "client went away")
                       : grpc::Status::OK);
}

void EmbedStreamReactor::OnCancel() {
  std::map<uint64_t, std::shared_ptr<EmbedJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs = jobs_;
  }
  // Outside the lock: a cancelled job completes at once and calls back into OnJobDone.
  for (const auto& [key, job] : jobs) job->Cancel();
}

void EmbedStreamReactor::OnDone() {
  const bool ok = finished_ && !write_failed_;
  embedder_->CallDone(
      {"EmbedStream", request_id_, ok ? absl::StatusCode::kOk : absl::StatusCode::kCancelled,
       ok ? "" : "client went away", absl::ToDoubleSeconds(absl::Now() - started_)});
  delete this;
}

}  // namespace embedding::server
