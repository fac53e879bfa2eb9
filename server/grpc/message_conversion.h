// Between the gRPC door's messages and the core's structs, both ways: an EmbedRequest becomes an
// EmbedCall; answers and model descriptions become response messages.
#pragma once

#include "absl/time/time.h"
#include "embedding/v1/embedding.pb.h"
#include "server/core/embedder.h"

namespace embedding::server {

// `request` (its inputs moved out) as the core's call, with `deadline`.
EmbedCall ToEmbedCall(v1::EmbedRequest* request, absl::Time deadline);
// `request` (its inputs moved out) as the core's Tokenize call.
TokenizeCall ToTokenizeCall(v1::TokenizeRequest* request);

void FillEmbedResponse(const EmbedAnswer& answer, v1::EmbedResponse* response);
void FillTokenizeResponse(const TokenizeAnswer& answer, v1::TokenizeResponse* response);
void FillModelInfo(const ServedModel& model, const RequestLimits& limits, v1::ModelInfo* info);

}  // namespace embedding::server
