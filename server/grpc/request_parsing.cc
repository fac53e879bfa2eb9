#include "server/grpc/request_parsing.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "model_store/unicode_text.h"
#include "server/grpc/unchecked_requests.pb.h"

namespace embedding::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

bool ParseFrom(const grpc::ByteBuffer& buffer, Message* message) {
  grpc::ByteBuffer copy(buffer);  // the reader consumes; slices are shared, not copied
  grpc::ProtoBufferReader reader(&copy);
  return message->ParseFromZeroCopyStream(&reader);
}

// The twin of `public_message`: same name in package embedding.v1.unchecked.
std::unique_ptr<Message> NewTwin(const Message& public_message) {
  const std::string name =
      absl::StrCat("embedding.v1.unchecked.", public_message.GetDescriptor()->name());
  const auto* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(name);
  if (descriptor == nullptr) return nullptr;
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
}

// The first `bytes` field of `message` (a twin, where every bytes field is a public string)
// that is not UTF-8, named by its path.
absl::Status FindInvalidUtf8(const Message& message, const std::string& path) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string name = path + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string label = field->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (field->type() == FieldDescriptor::TYPE_BYTES) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        absl::Status status = model_store::ValidateUtf8(value, label);
        if (!status.ok()) return status;
      } else if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
        const Message& child = field->is_repeated()
                                   ? reflection->GetRepeatedMessage(message, field, i)
                                   : reflection->GetMessage(message, field);
        absl::Status status = FindInvalidUtf8(child, label + ".");
        if (!status.ok()) return status;
      }
    }
  }
  return absl::OkStatus();
}

// Entries of field `field` inside the length-delimited fields `path[depth..]` of the message
// `in` reads, counted on the wire. Stops once `*count` exceeds `limit`; a malformed message
// stops the count (the parse after reports it).
void CountOnWire(google::protobuf::io::CodedInputStream* in, const std::vector<int>& path,
                 size_t depth, int field, int64_t limit, int64_t* count) {
  using WireFormat = google::protobuf::internal::WireFormatLite;
  while (*count <= limit) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return;
    const int number = WireFormat::GetTagFieldNumber(tag);
    const bool nested = WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED;
    if (depth < path.size() && number == path[depth] && nested) {
      uint32_t length = 0;
      if (!in->ReadVarint32(&length)) return;
      const auto outer = in->PushLimit(static_cast<int>(length));
      CountOnWire(in, path, depth + 1, field, limit, count);
      if (!in->Skip(in->BytesUntilLimit())) return;
      in->PopLimit(outer);
      continue;
    }
    if (depth == path.size() && number == field) ++*count;
    if (!WireFormat::SkipField(in, tag)) return;
  }
}

// The path of `inputs` in `descriptor`'s messages: {} for a request, {request} for a stream
// item; false when it has none.
bool InputsPath(const google::protobuf::Descriptor* descriptor, std::vector<int>* path, int* field,
                std::string* name) {
  if (const FieldDescriptor* inputs = descriptor->FindFieldByName("inputs")) {
    *field = inputs->number();
    *name = "inputs";
    return true;
  }
  const FieldDescriptor* request = descriptor->FindFieldByName("request");
  if (request == nullptr || request->message_type() == nullptr) return false;
  path->push_back(request->number());
  if (!InputsPath(request->message_type(), path, field, name)) return false;
  *name = "request." + *name;
  return true;
}

absl::Status CheckInputCount(const grpc::ByteBuffer& buffer, const Message& message,
                             int64_t max_inputs) {
  std::vector<int> path;
  int field = 0;
  std::string name;
  if (!InputsPath(message.GetDescriptor(), &path, &field, &name)) return absl::OkStatus();
  grpc::ByteBuffer copy(buffer);
  grpc::ProtoBufferReader reader(&copy);
  google::protobuf::io::CodedInputStream in(&reader);
  int64_t count = 0;
  CountOnWire(&in, path, 0, field, max_inputs, &count);
  if (count <= max_inputs) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, ": more than ", max_inputs,
                                                 " inputs; allowed [1, ", max_inputs,
                                                 "] (--max-inputs-per-request)"));
}

}  // namespace

absl::Status ParseRequest(const grpc::ByteBuffer& buffer, Message* message, int64_t max_inputs) {
  if (absl::Status count = CheckInputCount(buffer, *message, max_inputs); !count.ok()) return count;
  if (ParseFrom(buffer, message)) return absl::OkStatus();
  std::unique_ptr<Message> twin = NewTwin(*message);
  if (twin != nullptr && ParseFrom(buffer, twin.get())) {
    absl::Status bad_text = FindInvalidUtf8(*twin, "");
    if (!bad_text.ok()) return bad_text;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("request: not a valid ", message->GetTypeName(), " (malformed protobuf)"));
}

std::string StreamRequestId(const grpc::ByteBuffer& buffer) {
  v1::unchecked::EmbedStreamRequest twin;
  if (!ParseFrom(buffer, &twin)) return "";
  if (!model_store::ValidateUtf8(twin.request_id(), "request_id").ok()) return "";
  return twin.request_id();
}

void SerializeResponse(const Message& message, grpc::ByteBuffer* buffer) {
  bool own_buffer = false;
  grpc::SerializationTraits<Message>::Serialize(message, buffer, &own_buffer);
}

}  // namespace embedding::server
