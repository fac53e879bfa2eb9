// Parsing of text-carrying requests: invalid UTF-8 in every string field of every request
// message is INVALID_ARGUMENT naming that field, and the server-side twins stay in step with
// the public messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "embedding/v1/embedding.pb.h"
#include "google/protobuf/descriptor.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/unchecked_requests.pb.h"

namespace embedding::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using ::testing::StartsWith;

grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

const Descriptor* Public(const Descriptor* twin) {
  return google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName("embedding.v1." +
                                                                                   twin->name());
}

const std::vector<const Descriptor*>& Twins() {
  static const auto* const kTwins = new std::vector<const Descriptor*>{
      v1::unchecked::EmbedRequest::descriptor(), v1::unchecked::EmbedStreamRequest::descriptor(),
      v1::unchecked::TokenizeRequest::descriptor(),
      v1::unchecked::GetModelInfoRequest::descriptor(), v1::unchecked::RerankRequest::descriptor(),
      v1::unchecked::ClassifyRequest::descriptor()};
  return *kTwins;
}

TEST(RequestParsing, TwinsMatchThePublicMessagesFieldForField) {
  for (const Descriptor* twin : Twins()) {
    const Descriptor* pub = Public(twin);
    ASSERT_NE(pub, nullptr) << twin->name();
    EXPECT_EQ(twin->field_count(), pub->field_count()) << twin->name();
    int strings = 0;
    for (int i = 0; i < pub->field_count(); ++i) {
      const FieldDescriptor* p = pub->field(i);
      const FieldDescriptor* t = twin->FindFieldByNumber(p->number());
      ASSERT_NE(t, nullptr) << pub->name() << "." << p->name();
      EXPECT_EQ(t->name(), p->name());
      EXPECT_EQ(t->is_repeated(), p->is_repeated()) << p->name();
      EXPECT_EQ(t->has_presence(), p->has_presence()) << p->name();
      if (p->type() == FieldDescriptor::TYPE_STRING) {
        EXPECT_EQ(t->type(), FieldDescriptor::TYPE_BYTES) << p->name();
        ++strings;
      } else if (p->type() == FieldDescriptor::TYPE_MESSAGE) {
        EXPECT_EQ(Public(t->message_type()), p->message_type()) << p->name();
      } else {
        EXPECT_EQ(t->type(), p->type()) << p->name();
        if (p->enum_type() != nullptr) {
          EXPECT_EQ(t->enum_type(), p->enum_type());
        }
      }
    }
    // Every public message with text has a twin (listed above); none is left unchecked.
    (void)strings;
  }
}

// Sets every bytes field of a twin message to `value` in turn, and checks that parsing the
// public message names that field.
void ExpectEachStringFieldIsNamed(const Descriptor* twin_type, const std::string& path,
                                  const std::function<void(Message*, Message**)>& nest,
                                  const Descriptor* outer_public) {
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  for (int i = 0; i < twin_type->field_count(); ++i) {
    const FieldDescriptor* field = twin_type->field(i);
    if (field->type() != FieldDescriptor::TYPE_BYTES) continue;
    std::unique_ptr<Message> outer(
        factory
            ->GetPrototype(
                google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
                    "embedding.v1.unchecked." + outer_public->name()))
            ->New());
    Message* target = nullptr;
    nest(outer.get(), &target);
    const auto* reflection = target->GetReflection();
    const std::string bad = "ok\xC3\x28";  // a lead byte followed by a non-continuation
    std::string label = path + field->name();
    if (field->is_repeated()) {
      reflection->AddString(target, field, "fine");
      reflection->AddString(target, field, bad);
      label += "[1]";
    } else {
      reflection->SetString(target, field, bad);
    }
    std::unique_ptr<Message> pub(factory->GetPrototype(outer_public)->New());
    const absl::Status status = ParseRequest(ToBuffer(outer->SerializeAsString()), pub.get(), 512);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << label;
    EXPECT_THAT(std::string(status.message()), StartsWith(label + ": invalid UTF-8")) << label;
  }
}

TEST(RequestParsing, InvalidUtf8InEveryStringFieldOfEveryRequestIsNamed) {
  for (const Descriptor* twin : Twins()) {
    ExpectEachStringFieldIsNamed(
        twin, "", [](Message* outer, Message** target) { *target = outer; }, Public(twin));
  }
  // Fields nested in the stream item's request.
  ExpectEachStringFieldIsNamed(
      v1::unchecked::EmbedRequest::descriptor(), "request.",
      [](Message* outer, Message** target) {
        *target = static_cast<v1::unchecked::EmbedStreamRequest*>(outer)->mutable_request();
      },
      v1::EmbedStreamRequest::descriptor());
}

TEST(RequestParsing, ValidMessagesParseAndGarbageIsMalformed) {
  v1::EmbedStreamRequest item;
  item.set_request_id(std::string(300, 'r'));  // lengths of 128+ bytes take two varint bytes
  item.mutable_request()->set_model(std::string(200, 'm'));
  item.mutable_request()->add_inputs("naïve café");
  v1::EmbedStreamRequest parsed;
  ASSERT_TRUE(ParseRequest(ToBuffer(item.SerializeAsString()), &parsed, 512).ok());
  EXPECT_EQ(parsed.request_id(), item.request_id());
  EXPECT_EQ(parsed.request().model(), item.request().model());
  EXPECT_EQ(parsed.request().inputs(0), "naïve café");

  const absl::Status garbage = ParseRequest(ToBuffer("\xff\xff\xff"), &parsed, 512);
  EXPECT_EQ(garbage.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(garbage.message()), StartsWith("request: not a valid embedding.v1"));
}

TEST(RequestParsing, StreamItemKeepsItsIdWhenItsRequestIsBad) {
  v1::unchecked::EmbedStreamRequest item;
  item.set_request_id("item-7");
  item.mutable_request()->add_inputs("\xff");
  EXPECT_EQ(StreamRequestId(ToBuffer(item.SerializeAsString())), "item-7");
  item.set_request_id("\xff");
  EXPECT_EQ(StreamRequestId(ToBuffer(item.SerializeAsString())), "");
}

}  // namespace
}  // namespace embedding::server
