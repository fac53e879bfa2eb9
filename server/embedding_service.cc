#include "server/embedding_service.h"

#include "absl/strings/str_cat.h"
#include "server/embed_stream_reactor.h"
#include "server/raw_messages.h"
#include "server/request_validation.h"
#include "server/response_builder.h"
#include "server/status_mapping.h"
#include "server/unary_call.h"

namespace embedding::server {
absl::Time CallDeadline(const grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

EmbeddingService::EmbeddingService(const ServerOptions& options, WorkerPool* pool,
                                   Admission* admission, ServiceObserver observer)
    : options_(options), pool_(pool), admission_(admission), observer_(std::move(observer)) {}

void EmbeddingService::CallDone(const char* method, grpc::StatusCode code, absl::Time started) {
  if (observer_.on_rpc_done)
    observer_.on_rpc_done(method, code, absl::ToDoubleSeconds(absl::Now() - started));
  active_calls_.fetch_sub(1);
}

absl::StatusOr<const ModelRegistry*> EmbeddingService::ServingRegistry() const {
  if (draining_.load())
    return absl::UnavailableError("server is draining; retry on another replica");
  const ModelRegistry* registry = registry_.load();
  if (registry == nullptr)
    return absl::UnavailableError("server is loading its models; retry shortly");
  return registry;
}

absl::StatusOr<EmbeddingService::PendingJob> EmbeddingService::CreateJob(
    const v1::EmbedRequest& request, absl::Time deadline, EmbedDone done) {
  auto registry = ServingRegistry();
  if (!registry.ok()) return registry.status();
  auto served = (*registry)->Find(request.model());
  if (!served.ok()) return served.status();
  auto params = ValidateEmbedRequest(request, *(*served)->model, options_.limits);
  if (!params.ok()) return params.status();
  if (absl::Status admitted = admission_->AdmitRequest(); !admitted.ok()) return admitted;

  const ServedModel* model = *served;
  const EmbedParams job_params = *params;
  auto on_done = [this, model, job_params,
                  done = std::move(done)](absl::StatusOr<EmbedResult> result) {
    v1::EmbedResponse response;
    if (!result.ok()) {
      done(ToGrpcStatus(result.status()), std::move(response));
      return;
    }
    if (observer_.on_embedded) observer_.on_embedded(*model, job_params, *result);
    FillEmbedResponse(*model, job_params.strategy, *result, &response);
    done(grpc::Status::OK, std::move(response));
  };
  std::vector<std::string> inputs(request.inputs().begin(), request.inputs().end());
  JobLimits limits;
  limits.max_tokens_per_document = options_.limits.max_tokens_per_document;
  return PendingJob{std::make_shared<EmbedJob>(*model->model, job_params, std::move(inputs),
                                               deadline, limits, admission_, std::move(on_done)),
                    model->batcher.get()};
}

void EmbeddingService::LaunchJob(PendingJob pending) {
  pool_->Schedule([pending = std::move(pending)] {
    std::vector<SequenceTask> tasks = pending.job->Prepare();
    // No tasks: Prepare already completed the job with its error.
    if (!tasks.empty()) pending.batcher->Submit(std::move(tasks));
  });
}

grpc::ServerUnaryReactor* EmbeddingService::Embed(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request_bytes,
                                                  grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, "Embed");
  v1::EmbedRequest request;
  absl::Status parsed = ParseRawRequest(*request_bytes, {}, &request);
  if (!parsed.ok()) {
    call->FinishOnce(ToGrpcStatus(parsed));
    return call;
  }
  auto job =
      CreateJob(request, CallDeadline(context),
                [call, response_bytes](const grpc::Status& status, v1::EmbedResponse result) {
                  if (status.ok()) SerializeToBuffer(result, response_bytes);
                  call->FinishOnce(status);
                });
  if (!job.ok()) {
    call->FinishOnce(ToGrpcStatus(job.status()));
    return call;
  }
  call->set_on_cancel([job = job->job] { job->Cancel(); });
  LaunchJob(*std::move(job));
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* EmbeddingService::EmbedStream(
    grpc::CallbackServerContext* context) {
  return new EmbedStreamReactor(this, context);
}

grpc::ServerUnaryReactor* EmbeddingService::Tokenize(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, "Tokenize");
  auto request = std::make_shared<v1::TokenizeRequest>();
  absl::Status status = ParseRawRequest(*request_bytes, {}, request.get());
  auto registry = ServingRegistry();
  absl::StatusOr<const ServedModel*> served =
      registry.ok() ? (*registry)->Find(request->model()) : registry.status();
  if (status.ok()) status = served.status();
  if (status.ok()) status = ValidateInputCount(request->inputs_size(), options_.limits);
  if (status.ok()) status = admission_->AdmitRequest();
  if (!status.ok()) {
    call->FinishOnce(ToGrpcStatus(status));
    return call;
  }
  const ServedModel* model = *served;
  pool_->Schedule([this, call, request, response_bytes, model] {
    const auto& tokenizer = model->model->tokenizer();
    const bool specials = !request->has_add_special_tokens() || request->add_special_tokens();
    v1::TokenizeResponse response;
    response.set_model(model->name);
    grpc::Status result;
    for (int i = 0; i < request->inputs_size(); ++i) {
      auto tokens = tokenizer.Tokenize(request->inputs(i), absl::StrCat("inputs[", i, "]"));
      if (!tokens.ok()) {
        result = ToGrpcStatus(tokens.status());
        break;
      }
      FillTokenizedInput(tokenizer, request->inputs(i), *tokens, specials, response.add_inputs());
    }
    admission_->ReleaseRequest();
    if (result.ok()) SerializeToBuffer(response, response_bytes);
    call->FinishOnce(result);
  });
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::ListModels(grpc::CallbackServerContext* context,
                                                       const v1::ListModelsRequest* request,
                                                       v1::ListModelsResponse* response) {
  auto* call = new UnaryCall(this, "ListModels");
  auto registry = ServingRegistry();
  if (!registry.ok()) {
    call->FinishOnce(ToGrpcStatus(registry.status()));
    return call;
  }
  for (const auto& served : (*registry)->models())
    FillModelInfo(*served, options_.limits, response->add_models());
  response->set_default_model((*registry)->default_name());
  call->FinishOnce(grpc::Status::OK);
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const v1::GetModelInfoRequest* request,
                                                         v1::ModelInfo* response) {
  auto* call = new UnaryCall(this, "GetModelInfo");
  auto registry = ServingRegistry();
  absl::StatusOr<const ServedModel*> served =
      registry.ok() ? (*registry)->Find(request->model()) : registry.status();
  if (served.ok()) FillModelInfo(**served, options_.limits, response);
  call->FinishOnce(ToGrpcStatus(served.status()));
  return call;
}

}  // namespace embedding::server
