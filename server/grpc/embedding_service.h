// The gRPC door (callback API): parses each call's bytes, hands the core an EmbedCall, and
// builds the response from its answer. Every RPC finishes exactly once.
//   Embed → Accept (auth, ParseRequest) → ToEmbedCall → Embedder::StartEmbed
//   … done(EmbedAnswer) → FillEmbedResponse → UnaryCall::FinishOnce.
#pragma once

#include "embedding/v1/embedding.grpc.pb.h"
#include "server/core/embedder.h"
#include "server/security/bearer_auth.h"

namespace embedding::server {

class UnaryCall;

// The methods that carry text take raw bytes, so a string that is not UTF-8 gets
// INVALID_ARGUMENT naming the field (grpc_messages.h); ListModels carries none.
using EmbeddingServiceBase = v1::EmbeddingService::WithRawCallbackMethod_Embed<
    v1::EmbeddingService::WithRawCallbackMethod_EmbedStream<
        v1::EmbeddingService::WithRawCallbackMethod_Tokenize<
            v1::EmbeddingService::WithCallbackMethod_ListModels<
                v1::EmbeddingService::WithRawCallbackMethod_GetModelInfo<
                    v1::EmbeddingService::WithRawCallbackMethod_Rerank<
                        v1::EmbeddingService::WithRawCallbackMethod_Classify<
                            v1::EmbeddingService::Service>>>>>>>;

class EmbeddingService final : public EmbeddingServiceBase {
 public:
  // `embedder` and `auth` (may be null: no authentication) must outlive the service.
  EmbeddingService(Embedder* embedder, const BearerAuth* auth);

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
  grpc::ServerUnaryReactor* Rerank(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Classify(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

 private:
  // OK without authentication or with an accepted bearer token; UNAUTHENTICATED otherwise.
  absl::Status Authorize(const grpc::CallbackServerContext* context) const;
  // Authorizes the call and parses `bytes` into `request` (null for a method without text);
  // on failure finishes `call` with the error and returns false.
  bool Accept(UnaryCall* call, const grpc::CallbackServerContext* context,
              const grpc::ByteBuffer* bytes, google::protobuf::Message* request) const;
  // Finishes `call` with `job`'s error, or hands it the job's Cancel.
  static void Started(UnaryCall* call, absl::StatusOr<std::shared_ptr<EmbedJob>> job);

  Embedder* const embedder_;
  const BearerAuth* const auth_;
};

}  // namespace embedding::server
