// Rerank and Classify on the gRPC wire: requests into the core's calls, answers into
// responses. The Embed messages' conversions are in grpc_messages.h.
#pragma once

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "embedding/v1/embedding.pb.h"
#include "server/core/score_call.h"

namespace embedding::server {

// `request` (its texts moved out) as the core's call; INVALID_ARGUMENT naming the field for
// an enum number the .proto does not define.
absl::StatusOr<RerankCall> ToRerankCall(v1::RerankRequest* request, absl::Time deadline);
absl::StatusOr<ClassifyCall> ToClassifyCall(v1::ClassifyRequest* request, absl::Time deadline);

// The answer, with each result's document text when the request asked (`documents`: the
// request's documents, or null).
void FillRerankResponse(const ScoreAnswer& answer, const std::vector<std::string>* documents,
                        v1::RerankResponse* response);
void FillClassifyResponse(const ScoreAnswer& answer, v1::ClassifyResponse* response);

}  // namespace embedding::server
