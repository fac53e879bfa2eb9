#include "server/embed_stream_reactor.h"

#include <algorithm>

#include "server/raw_messages.h"
#include "server/status_mapping.h"

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

EmbedStreamReactor::EmbedStreamReactor(EmbeddingService* service,
                                       grpc::CallbackServerContext* context)
    : service_(service), context_(context), started_(absl::Now()) {
  service_->CallStarted();
  StartRead(&request_);
}

void EmbedStreamReactor::OnReadDone(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!ok) {  // the client half-closed, or the call is over
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  v1::EmbedStreamRequest item;
  const absl::Status parsed = ParseRawRequest(request_, {2}, &item);
  const std::string id = parsed.ok() ? item.request_id() : ReadTopLevelString(request_, 1);
  auto pending =
      parsed.ok()
          ? service_->CreateJob(item.request(), CallDeadline(context_),
                                [this, id](const grpc::Status& status, v1::EmbedResponse response) {
                                  OnJobDone(id, status, std::move(response));
                                })
          : absl::StatusOr<EmbeddingService::PendingJob>(parsed);
  if (!pending.ok()) {
    EnqueueLocked(ErrorItem(id, ToGrpcStatus(pending.status())));
  } else {
    ++outstanding_;
    jobs_.push_back(pending->job);
    service_->LaunchJob(*std::move(pending));
  }
  if (outstanding_ < kMaxOutstanding) {
    StartRead(&request_);
  } else {
    read_paused_ = true;
  }
}

void EmbedStreamReactor::OnJobDone(const std::string& request_id, const grpc::Status& status,
                                   v1::EmbedResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  --outstanding_;
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [](const std::shared_ptr<EmbedJob>& job) { return job->done(); }),
              jobs_.end());
  if (status.ok()) {
    v1::EmbedStreamResponse out;
    out.set_request_id(request_id);
    *out.mutable_response() = std::move(response);
    EnqueueLocked(out);
  } else {
    EnqueueLocked(ErrorItem(request_id, status));
  }
  if (read_paused_ && !reads_done_) {
    read_paused_ = false;
    StartRead(&request_);
  }
  MaybeFinishLocked();
}

void EmbedStreamReactor::EnqueueLocked(const v1::EmbedStreamResponse& response) {
  if (write_failed_) return;  // the client is gone; nobody will read it
  writes_.emplace_back();
  SerializeToBuffer(response, &writes_.back());
  if (!writing_) {
    writing_ = true;
    StartWrite(&writes_.front());
  }
}

void EmbedStreamReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writes_.pop_front();
  if (!ok) {
    write_failed_ = true;
    writes_.clear();
  }
  if (!writes_.empty()) {
    StartWrite(&writes_.front());
  } else {
    writing_ = false;
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
  std::vector<std::shared_ptr<EmbedJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs = jobs_;
  }
  // Outside the lock: a cancelled job completes at once and calls back into OnJobDone.
  for (const auto& job : jobs) job->Cancel();
}

void EmbedStreamReactor::OnDone() {
  service_->CallDone(
      "EmbedStream",
      finished_ && !write_failed_ ? grpc::StatusCode::OK : grpc::StatusCode::CANCELLED, started_);
  delete this;
}

}  // namespace embedding::server
