// The gRPC door's wire format, both ways. Requests: proto3 refuses a `string` field holding
// invalid UTF-8 without saying which one; here a failed parse is retried on the server-side
// twin of the message (unchecked_requests.proto, `bytes` for `string`), so the answer is
// INVALID_ARGUMENT naming the field: "inputs[2]: invalid UTF-8 at byte 17"; a parsed
// EmbedRequest becomes the core's EmbedCall, its enums mapped onto the core's vocabulary
// (server/core/vocabulary.h; proto3 lets a number the .proto does not define through, and it is
// refused here, naming the field). Answers and model descriptions become response messages.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "embedding/v1/embedding.pb.h"
#include "google/protobuf/message.h"
#include "server/core/embedder.h"
#include "server/core/vocabulary.h"

namespace embedding::server {

// Parses `buffer` into `message` (an embedding.v1 request with a twin). First, without parsing,
// counts the message's `inputs` (or its `request.inputs`) on the wire: 10 million empty inputs
// are 20 MB there but 570 MB parsed, so more than `max_inputs` is INVALID_ARGUMENT before any
// allocation. On a failed parse: INVALID_ARGUMENT naming the first string field that is not
// UTF-8 (nested ones as "request.inputs[0]"), or saying the message is malformed.
absl::Status ParseRequest(const grpc::ByteBuffer& buffer, google::protobuf::Message* message,
                          int64_t max_inputs);

// An EmbedStreamRequest item's request_id even when the item does not parse (so its error
// can be answered under its id); "" when there is none or it is not UTF-8.
std::string StreamRequestId(const grpc::ByteBuffer& buffer);

// `message` serialized into `buffer`.
void SerializeResponse(const google::protobuf::Message& message, grpc::ByteBuffer* buffer);

// `request` (its inputs moved out) as the core's call, with `deadline`; INVALID_ARGUMENT
// naming the field for an enum number the .proto does not define.
absl::StatusOr<EmbedCall> ToEmbedCall(v1::EmbedRequest* request, absl::Time deadline);
// `request` (its inputs moved out) as the core's Tokenize call.
TokenizeCall ToTokenizeCall(v1::TokenizeRequest* request);

// The core's value for a wire value of `field`: nullopt for UNSPECIFIED (the core's default
// applies); INVALID_ARGUMENT "field: unknown value N; allowed a..b (NAMES)" for an undefined one.
absl::StatusOr<std::optional<Strategy>> FromWire(v1::LongTextStrategy value,
                                                 absl::string_view field);
absl::StatusOr<std::optional<Output>> FromWire(v1::EmbeddingOutput value, absl::string_view field);
absl::StatusOr<std::optional<VectorEncoding>> FromWire(v1::VectorEncoding value,
                                                       absl::string_view field);
absl::StatusOr<std::optional<TemperatureMode>> FromWire(v1::TemperatureMode value,
                                                        absl::string_view field);
absl::StatusOr<std::optional<TruncationSide>> FromWire(v1::TruncationSide value,
                                                       absl::string_view field);

v1::LongTextStrategy ToWire(Strategy strategy);
v1::EmbeddingOutput ToWire(Output output);
v1::VectorEncoding ToWire(VectorEncoding encoding);
v1::TemperatureMode ToWire(TemperatureMode mode);
v1::TruncationSide ToWire(TruncationSide side);

// "EMBEDDING_OUTPUT_SPARSE": how the core's refusals name an output to a gRPC caller.
std::string WireOutputName(Output output);

void FillEmbedResponse(const EmbedAnswer& answer, v1::EmbedResponse* response);
void FillTokenizeResponse(const TokenizeAnswer& answer, v1::TokenizeResponse* response);
void FillModelInfo(const ServedModel& model, const RequestLimits& limits, v1::ModelInfo* info);
void SetSpan(const Span& from, v1::Span* to);
// The counts and timings every answer that ran forward passes carries.
void FillUsage(const EmbedResult& result, v1::Usage* usage, v1::Timings* timings);

}  // namespace embedding::server
