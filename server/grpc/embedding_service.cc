#include "server/grpc/embedding_service.h"

#include "server/grpc/call_context.h"
#include "server/grpc/embed_stream_reactor.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/score_messages.h"
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
  Started(call, embedder_->StartEmbed(*std::move(embed),
                                      Reply(call, response_bytes, &FillEmbedResponse)));
  return call;
}

void EmbeddingService::Started(UnaryCall* call, absl::StatusOr<std::shared_ptr<EmbedJob>> job) {
  if (!job.ok()) return call->FinishOnce(job.status());
  call->SetOnCancel([job = *std::move(job)] { job->Cancel(); });
}

grpc::ServerUnaryReactor* EmbeddingService::Rerank(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request_bytes,
                                                   grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(embedder_, "Rerank", context);
  v1::RerankRequest request;
  if (!Accept(call, context, request_bytes, &request)) return call;
  const bool echo = request.return_documents();
  absl::StatusOr<RerankCall> rerank = ToRerankCall(&request, CallDeadline(context));
  if (!rerank.ok()) {
    call->FinishOnce(rerank.status());
    return call;
  }
  // The texts go to the job; an echo keeps its own copy (bounded by --max-request-bytes).
  auto documents =
      echo ? std::make_shared<const std::vector<std::string>>(rerank->documents) : nullptr;
  Started(call, embedder_->StartRerank(
                    *std::move(rerank),
                    [call, response_bytes, documents](absl::StatusOr<ScoreAnswer> answer) {
                      if (answer.ok()) {
                        v1::RerankResponse response;
                        FillRerankResponse(*answer, documents.get(), &response);
                        SerializeResponse(response, response_bytes);
                      }
                      call->FinishOnce(answer.status());
                    }));
  return call;
}

grpc::ServerUnaryReactor* EmbeddingService::Classify(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(embedder_, "Classify", context);
  v1::ClassifyRequest request;
  if (!Accept(call, context, request_bytes, &request)) return call;
  absl::StatusOr<ClassifyCall> classify = ToClassifyCall(&request, CallDeadline(context));
  if (!classify.ok()) {
    call->FinishOnce(classify.status());
    return call;
  }
  Started(call, embedder_->StartClassify(*std::move(classify),
                                         Reply(call, response_bytes, &FillClassifyResponse)));
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
