// Request parsing for the raw (ByteBuffer) gRPC methods. proto3 refuses to parse a string
// field holding invalid UTF-8, and gRPC would then answer with a code that names nothing.
// Parsing here instead lets the service answer INVALID_ARGUMENT naming the input
// ("inputs[2]: invalid UTF-8 at byte 17").
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace embedding::server {

// Parses `buffer` into `message`. On failure: INVALID_ARGUMENT naming the first `inputs`
// entry (repeated string field 2, reached through the message fields in `nesting`) that is
// not UTF-8, or else saying the message is malformed.
absl::Status ParseRawRequest(const grpc::ByteBuffer& buffer, const std::vector<int>& nesting,
                             google::protobuf::Message* message);

// The serialized bytes of `message` as a ByteBuffer.
void SerializeToBuffer(const google::protobuf::Message& message, grpc::ByteBuffer* buffer);

// The value of string field `field` of the top-level serialized message, or "" (used to
// answer a stream item that failed to parse under its own request id).
std::string ReadTopLevelString(const grpc::ByteBuffer& buffer, int field);

}  // namespace embedding::server
