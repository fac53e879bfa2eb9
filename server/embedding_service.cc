#include "server/embedding_service.h"

#include "absl/strings/str_cat.h"
#include "server/embed_stream_reactor.h"
#include "server/request_parsing.h"
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
                                   Admission* admission, ServiceObserver observer,
                                   const BearerAuth* auth)
    : options_(options),
      pool_(pool),
      admission_(admission),
      observer_(std::move(observer)),
      auth_(auth) {}

absl::Status EmbeddingService::Authorize(const grpc::CallbackServerContext* context) const {
  if (auth_ == nullptr) return absl::OkStatus();
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  return auth_->Check(it == metadata.end() ? absl::string_view()
                                           : absl::string_view(it->second.data(),
                                                               it->second.size()));
}

void EmbeddingService::CallDone(const CallRecord& call) {
  if (observer_.on_rpc_done) observer_.on_rpc_done(call);
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

absl::StatusOr<std::vector<std::shared_ptr<const ServedModel>>> EmbeddingService::CurrentModels()
    const {
  auto registry = ServingRegistry();
  if (!registry.ok()) return registry.status();
  return (*registry)->Current();
}

absl::StatusOr<std::shared_ptr<const ServedModel>> EmbeddingService::FindModel(
    const std::string& name) const {
  auto registry = ServingRegistry();
  if (!registry.ok()) return registry.status();
  return (*registry)->Find(name);
}

absl::StatusOr<std::shared_ptr<EmbedJob>> EmbeddingService::StartEmbed(
    const v1::EmbedRequest& request, absl::Time deadline, Responder respond,
    std::vector<std::vector<int32_t>> token_ids) {
  auto served = FindModel(request.model());
  if (!served.ok()) return served.status();
  // The version this request runs on until it is answered, even if a reload replaces it.
  std::shared_ptr<const ServedModel> model = *std::move(served);
  auto params = ValidateEmbedRequest(request, *model->model, options_.limits);
  if (!params.ok()) return params.status();
  auto permit = admission_->Admit();
  if (!permit.ok()) return permit.status();

  EmbedJob::Request job;
  job.model = model->model.get();
  job.batcher = model->batcher.get();
  job.params = *params;
  job.inputs.assign(request.inputs().begin(), request.inputs().end());
  job.token_ids = std::move(token_ids);
  job.deadline = deadline;
  job.max_tokens_per_document = options_.limits.max_tokens_per_document;
  job.permit = *std::move(permit);
  return EmbedJob::Start(std::move(job), pool_,
                         [this, model, params = *params,
                          respond = std::move(respond)](absl::StatusOr<EmbedResult> result) {
                           v1::EmbedResponse response;
                           if (result.ok()) {
                             if (observer_.on_embedded)
                               observer_.on_embedded(*model, params, *result);
                             FillEmbedResponse(*model, params.strategy, *result, &response);
                           }
                           respond(ToGrpcStatus(result.status()), std::move(response));
                         });
}

grpc::ServerUnaryReactor* EmbeddingService::Embed(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request_bytes,
                                                  grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, "Embed", context);
  v1::EmbedRequest request;
  absl::Status parsed = Authorize(context);
  if (parsed.ok()) parsed = ParseRequest(*request_bytes, &request, limits().max_inputs_per_request);
  if (!parsed.ok()) {
    call->FinishOnce(ToGrpcStatus(parsed));
    return call;
  }
  auto job = StartEmbed(request, CallDeadline(context),
                        [call, response_bytes](const grpc::Status& status, v1::EmbedResponse r) {
                          if (status.ok()) SerializeResponse(r, response_bytes);
                          call->FinishOnce(status);
                        });
  if (!job.ok()) {
    call->FinishOnce(ToGrpcStatus(job.status()));
    return call;
  }
  call->SetOnCancel([job = *std::move(job)] { job->Cancel(); });
  return call;
}

namespace {

// A stream refused before its first read (authentication): finishes at once, owns itself.
class RefusedStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* EmbeddingService::EmbedStream(
    grpc::CallbackServerContext* context) {
  if (absl::Status denied = Authorize(context); !denied.ok()) {
    CallStarted();  // counted like every call, so metrics and the log see the refusal
    CallDone({"EmbedStream", AcceptRequestId(context), grpc::StatusCode::UNAUTHENTICATED,
              std::string(denied.message()), 0.0});
    return new RefusedStream(ToGrpcStatus(denied));
  }
  return new EmbedStreamReactor(this, context);
}

grpc::ServerUnaryReactor* EmbeddingService::Tokenize(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, "Tokenize", context);
  auto request = std::make_shared<v1::TokenizeRequest>();
  absl::Status status = Authorize(context);
  if (status.ok()) status = ParseRequest(*request_bytes, request.get(), limits().max_inputs_per_request);
  absl::StatusOr<std::shared_ptr<const ServedModel>> served =
      status.ok() ? FindModel(request->model()) : status;
  if (status.ok()) status = served.status();
  if (status.ok()) status = ValidateInputCount(request->inputs_size(), options_.limits);
  if (status.ok()) status = ValidateTextBytes(request->inputs(), 0, options_.limits);
  absl::StatusOr<AdmissionPermit> permit =
      status.ok() ? admission_->Admit() : absl::StatusOr<AdmissionPermit>(status);
  if (!permit.ok()) {
    call->FinishOnce(ToGrpcStatus(permit.status()));
    return call;
  }
  // Held until the answer is built: the slot comes back on every path.
  auto slot = std::make_shared<AdmissionPermit>(*std::move(permit));
  std::shared_ptr<const ServedModel> model = *std::move(served);
  // The response carries ~50 bytes per token: bounded like one document's tokens.
  const int64_t max_tokens = options_.limits.max_tokens_per_document;
  pool_->Schedule([call, request, response_bytes, model, slot, max_tokens] {
    const auto& tokenizer = model->model->tokenizer();
    const bool specials = !request->has_add_special_tokens() || request->add_special_tokens();
    v1::TokenizeResponse response;
    response.set_model(model->name);
    grpc::Status result;
    int64_t total = 0;
    for (int i = 0; i < request->inputs_size(); ++i) {
      auto tokens = tokenizer.Tokenize(request->inputs(i), absl::StrCat("inputs[", i, "]"));
      if (tokens.ok() && (total += static_cast<int64_t>(tokens->ids.size())) > max_tokens) {
        tokens = absl::InvalidArgumentError(absl::StrCat(
            "inputs[", i, "]: the inputs make more than ", max_tokens,
            " tokens; allowed [0, ", max_tokens, "] per Tokenize call (--max-tokens-per-document)"));
      }
      if (!tokens.ok()) {
        result = ToGrpcStatus(tokens.status());
        break;
      }
      FillTokenizedInput(*model->model, request->inputs(i), *tokens, specials,
                         response.add_inputs());
    }
    slot->Reset();
    if (result.ok()) SerializeResponse(response, response_bytes);
    call->FinishOnce(result);
  });
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::ListModels(grpc::CallbackServerContext* context,
                                                       const v1::ListModelsRequest* request,
                                                       v1::ListModelsResponse* response) {
  auto* call = new UnaryCall(this, "ListModels", context);
  if (absl::Status denied = Authorize(context); !denied.ok()) {
    call->FinishOnce(ToGrpcStatus(denied));
    return call;
  }
  auto registry = ServingRegistry();
  if (!registry.ok()) {
    call->FinishOnce(ToGrpcStatus(registry.status()));
    return call;
  }
  for (const auto& served : (*registry)->Current())
    FillModelInfo(*served, options_.limits, response->add_models());
  response->set_default_model((*registry)->default_name());
  call->FinishOnce(grpc::Status::OK);
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, "GetModelInfo", context);
  v1::GetModelInfoRequest request;
  absl::Status parsed = Authorize(context);
  if (parsed.ok()) parsed = ParseRequest(*request_bytes, &request, limits().max_inputs_per_request);
  absl::StatusOr<std::shared_ptr<const ServedModel>> served =
      parsed.ok() ? FindModel(request.model()) : parsed;
  if (served.ok()) {
    v1::ModelInfo info;
    FillModelInfo(**served, options_.limits, &info);
    SerializeResponse(info, response_bytes);
  }
  call->FinishOnce(ToGrpcStatus(served.status()));
  return call;
}

}  // namespace embedding::server
