#include "server/grpc/embedding_service.h"

#include "server/grpc/call_context.h"
#include "server/grpc/embed_stream_reactor.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/status_mapping.h"
#include "server/grpc/unary_call.h"

namespace embedding::server {
namespace {

// A stream refused before its first read (authentication): finishes at once, owns itself.
class RefusedStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// The completion of a unary call: on success the answer, filled into a Response by `fill`, is
// serialized into `bytes`; either way the call finishes with the answer's status.
template <typename Response, typename Answer>
std::function<void(absl::StatusOr<Answer>)> Reply(UnaryCall* call, grpc::ByteBuffer* bytes,
                                                  void (*fill)(const Answer&, Response*)) {
  return [call, bytes, fill](absl::StatusOr<Answer> answer) {
    if (answer.ok()) {
      Response response;
      fill(*answer, &response);
      SerializeResponse(response, bytes);
    }
    call->FinishOnce(answer.status());
  };
}

}  // namespace

EmbeddingService::EmbeddingService(Embedder* embedder, const BearerAuth* auth)
    : embedder_(embedder), auth_(auth) {}

absl::Status EmbeddingService::Authorize(const grpc::CallbackServerContext* context) const {
  if (auth_ == nullptr) return absl::OkStatus();
  return auth_->Check(AuthorizationHeader(context));
}

bool EmbeddingService::Accept(UnaryCall* call, const grpc::CallbackServerContext* context,
                              const grpc::ByteBuffer* bytes,
                              google::protobuf::Message* request) const {
  absl::Status status = Authorize(context);
  if (status.ok() && request != nullptr)
    status = ParseRequest(*bytes, request, embedder_->limits().max_inputs_per_request);
  if (!status.ok()) call->FinishOnce(status);
  return status.ok();
}

grpc::ServerUnaryReactor* EmbeddingService::Embed(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request_bytes,
                                                  grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(embedder_, "Embed", context);
  v1::EmbedRequest request;
  if (!Accept(call, context, request_bytes, &request)) return call;
  absl::StatusOr<EmbedCall> embed = ToEmbedCall(&request, CallDeadline(context));
  if (!embed.ok()) {
    call->FinishOnce(embed.status());
    return call;
  }
  auto job =
      embedder_->StartEmbed(*std::move(embed), Reply(call, response_bytes, &FillEmbedResponse));
  if (!job.ok()) {
    call->FinishOnce(job.status());
    return call;
  }
  call->SetOnCancel([job = *std::move(job)] { job->Cancel(); });
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* EmbeddingService::EmbedStream(
    grpc::CallbackServerContext* context) {
  if (absl::Status denied = Authorize(context); !denied.ok()) {
    embedder_->CallStarted();  // counted like every call, so metrics and the log see the refusal
    embedder_->CallDone({"EmbedStream", AcceptRequestId(context), denied.code(),
                         std::string(denied.message()), 0.0});
    return new RefusedStream(ToGrpcStatus(denied));
  }
  return new EmbedStreamReactor(embedder_, context);
}

grpc::ServerUnaryReactor* EmbeddingService::Tokenize(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(embedder_, "Tokenize", context);
  v1::TokenizeRequest request;
  if (!Accept(call, context, request_bytes, &request)) return call;
  const absl::Status started = embedder_->StartTokenize(
      ToTokenizeCall(&request), Reply(call, response_bytes, &FillTokenizeResponse));
  if (!started.ok()) call->FinishOnce(started);
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::ListModels(grpc::CallbackServerContext* context,
                                                       const v1::ListModelsRequest* request,
                                                       v1::ListModelsResponse* response) {
  auto* call = new UnaryCall(embedder_, "ListModels", context);
  if (!Accept(call, context, nullptr, nullptr)) return call;
  auto models = embedder_->CurrentModels();
  auto default_name = embedder_->DefaultModelName();
  if (!models.ok() || !default_name.ok()) {
    call->FinishOnce(models.ok() ? default_name.status() : models.status());
    return call;
  }
  for (const auto& served : *models)
    FillModelInfo(*served, embedder_->limits(), response->add_models());
  response->set_default_model(*default_name);
  call->FinishOnce(grpc::Status::OK);
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(embedder_, "GetModelInfo", context);
  v1::GetModelInfoRequest request;
  if (!Accept(call, context, request_bytes, &request)) return call;
  auto served = embedder_->FindModel(request.model());
  if (served.ok()) {
    v1::ModelInfo info;
    FillModelInfo(**served, embedder_->limits(), &info);
    SerializeResponse(info, response_bytes);
  }
  call->FinishOnce(served.status());
  return call;
}

}  // namespace embedding::server
