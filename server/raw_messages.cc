#include "server/raw_messages.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "model_store/unicode_text.h"

namespace embedding::server {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// A minimal protobuf wire reader: enough to walk fields and find length-delimited ones.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes) : bytes_(bytes) {}

  // Next field: number, wire type, and for length-delimited fields the payload.
  bool Next(int* field, int* wire_type, absl::string_view* payload) {
    if (pos_ >= bytes_.size()) return false;
    auto tag = Varint();
    if (!tag) return false;
    *field = static_cast<int>(*tag >> 3);
    *wire_type = static_cast<int>(*tag & 7);
    switch (*wire_type) {
      case 0:
        return Varint().has_value();
      case 1:
        return Skip(8);
      case 5:
        return Skip(4);
      case 2: {
        auto len = Varint();
        if (!len || *len > bytes_.size() - pos_) return false;
        *payload = bytes_.substr(pos_, *len);
        pos_ += *len;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  std::optional<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    return std::nullopt;
  }
  bool Skip(size_t n) {
    if (n > bytes_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

  absl::string_view bytes_;
  size_t pos_ = 0;
};

// The first `inputs` (field 2) entry that is not UTF-8, as an error; OK if none is found.
absl::Status FindBadInput(absl::string_view bytes, const std::vector<int>& nesting, size_t depth) {
  WireReader reader(bytes);
  int field = 0, wire_type = 0, index = 0;
  absl::string_view payload;
  while (reader.Next(&field, &wire_type, &payload)) {
    if (wire_type != 2) continue;
    if (depth < nesting.size()) {
      if (field == nesting[depth]) return FindBadInput(payload, nesting, depth + 1);
      continue;
    }
    if (field != 2) continue;
    absl::Status status = model_store::ValidateUtf8(
        std::string_view(payload.data(), payload.size()), absl::StrCat("inputs[", index++, "]"));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseRawRequest(const grpc::ByteBuffer& buffer, const std::vector<int>& nesting,
                             google::protobuf::Message* message) {
  const std::string bytes = Flatten(buffer);
  if (message->ParseFromString(bytes)) return absl::OkStatus();
  absl::Status bad_input = FindBadInput(bytes, nesting, 0);
  if (!bad_input.ok()) return bad_input;
  return absl::InvalidArgumentError(
      absl::StrCat("request: not a valid ", message->GetTypeName(),
                   " (malformed protobuf, or a string field that is not UTF-8)"));
}

void SerializeToBuffer(const google::protobuf::Message& message, grpc::ByteBuffer* buffer) {
  const std::string bytes = message.SerializeAsString();
  grpc::Slice slice(bytes);
  *buffer = grpc::ByteBuffer(&slice, 1);
}

std::string ReadTopLevelString(const grpc::ByteBuffer& buffer, int field) {
  const std::string bytes = Flatten(buffer);
  WireReader reader(bytes);
  int number = 0, wire_type = 0;
  absl::string_view payload;
  while (reader.Next(&number, &wire_type, &payload)) {
    if (number == field && wire_type == 2) return std::string(payload);
  }
  return "";
}

}  // namespace embedding::server
