// The gRPC EmbeddingService (callback API): where the request path starts and ends.
//   Embed → ParseRequest → StartEmbed [ValidateEmbedRequest → Admission::Admit →
//   EmbedJob::Start] … EmbedJob completes → FillEmbedResponse → UnaryCall::FinishOnce.
// Handlers only parse, validate, admit and enqueue; every RPC finishes exactly once.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "embedding/v1/embedding.grpc.pb.h"
#include "server/admission.h"
#include "server/bearer_auth.h"
#include "server/embed_job.h"
#include "server/model_registry.h"
#include "server/request_log.h"
#include "server/server_options.h"
#include "server/worker_pool.h"

namespace embedding::server {

// The call's deadline as absl::Time (InfiniteFuture when none).
absl::Time CallDeadline(const grpc::CallbackServerContext* context);

// Hooks for metrics; every member may be empty.
struct ServiceObserver {
  // Every finished RPC: its method ("Embed", ...), request id, code, message and duration.
  std::function<void(const CallRecord& call)> on_rpc_done;
  // Every successful Embed (unary or stream item).
  std::function<void(const ServedModel& model, const EmbedParams& params,
                     const EmbedResult& result)>
      on_embedded;
};

// The methods that carry text take raw bytes, so a string that is not UTF-8 gets
// INVALID_ARGUMENT naming the field (request_parsing.h); ListModels carries none.
using EmbeddingServiceBase = v1::EmbeddingService::WithRawCallbackMethod_Embed<
    v1::EmbeddingService::WithRawCallbackMethod_EmbedStream<
        v1::EmbeddingService::WithRawCallbackMethod_Tokenize<
            v1::EmbeddingService::WithCallbackMethod_ListModels<
                v1::EmbeddingService::WithRawCallbackMethod_GetModelInfo<
                    v1::EmbeddingService::Service>>>>>;

class EmbeddingService final : public EmbeddingServiceBase {
 public:
  // `pool` and `admission` must outlive the service.
  // `auth` (may be null: no authentication) must outlive the service.
  EmbeddingService(const ServerOptions& options, WorkerPool* pool, Admission* admission,
                   ServiceObserver observer = {}, const BearerAuth* auth = nullptr);

  // Until called, every RPC answers UNAVAILABLE (models are loading). `registry` must
  // outlive the service.
  void SetReady(const ModelRegistry* registry) { registry_.store(registry); }
  // From now on new RPCs answer UNAVAILABLE; accepted work continues.
  void StartDraining() { draining_.store(true); }
  // The current version of every served model; UNAVAILABLE while loading or draining.
  absl::StatusOr<std::vector<std::shared_ptr<const ServedModel>>> CurrentModels() const;
  // RPCs started and not yet done.
  int64_t active_calls() const { return active_calls_.load(); }

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* EmbedStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

  // Validates and admits one Embed request and starts its job; shared by Embed and
  // EmbedStream. `respond` runs exactly once with the final status and response. Returns the
  // job (for cancellation), or the validation/admission error, in which case `respond` never
  // runs.
  // `token_ids` (the OpenAI endpoint's token-id input) replaces the text of `request.inputs`
  // (one empty placeholder each) with content token ids, checked against the vocabulary.
  using Responder = std::function<void(const grpc::Status&, v1::EmbedResponse)>;
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartEmbed(
      const v1::EmbedRequest& request, absl::Time deadline, Responder respond,
      std::vector<std::vector<int32_t>> token_ids = {});

  // Bookkeeping for reactors.
  void CallStarted() { active_calls_.fetch_add(1); }
  const RequestLimits& limits() const { return options_.limits; }
  void CallDone(const CallRecord& call);

 private:
  // OK without authentication or with an accepted bearer token; UNAUTHENTICATED otherwise.
  absl::Status Authorize(const grpc::CallbackServerContext* context) const;
  // Checks readiness and draining. UNAVAILABLE when not serving.
  absl::StatusOr<const ModelRegistry*> ServingRegistry() const;
  // The served model `name` ("" for the default); UNAVAILABLE or NOT_FOUND.
  absl::StatusOr<std::shared_ptr<const ServedModel>> FindModel(const std::string& name) const;

  const ServerOptions options_;
  WorkerPool* const pool_;
  Admission* const admission_;
  const ServiceObserver observer_;
  const BearerAuth* const auth_;
  std::atomic<const ModelRegistry*> registry_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> active_calls_{0};
};

}  // namespace embedding::server
