// The gRPC door's map between embedding.proto's enums and the core's vocabulary: every value
// the .proto defines maps to one core value and back, every core value has a wire value, the
// strategy names agree with the client's (read off the .proto), and numbers the .proto does
// not define are refused naming the field, before the core sees the call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "embedding/v1/embedding.pb.h"
#include "embedding/v1/strategy_names.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "server/grpc/grpc_messages.h"

namespace embedding::server {
namespace {

using ::testing::StartsWith;

// Every defined value but UNSPECIFIED maps to a distinct core value that maps back to it;
// UNSPECIFIED maps to nothing (the core's default); `core_count` core values are all reached.
template <typename Wire>
void ExpectBijection(size_t core_count) {
  const auto* descriptor = google::protobuf::GetEnumDescriptor<Wire>();
  std::set<int> reached;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto wire = static_cast<Wire>(descriptor->value(i)->number());
    auto core = FromWire(wire, "field");
    ASSERT_TRUE(core.ok()) << descriptor->value(i)->name();
    if (descriptor->value(i)->number() == 0) {
      EXPECT_FALSE(core->has_value()) << descriptor->value(i)->name();
      continue;
    }
    ASSERT_TRUE(core->has_value()) << descriptor->value(i)->name();
    EXPECT_EQ(ToWire(**core), wire) << descriptor->value(i)->name();
    reached.insert(static_cast<int>(**core));
  }
  EXPECT_EQ(reached.size(), core_count) << descriptor->name();
}

TEST(MessageEnums, EveryEnumMapsBothWays) {
  ExpectBijection<v1::LongTextStrategy>(AllStrategies().size());
  ExpectBijection<v1::EmbeddingOutput>(3);
  ExpectBijection<v1::VectorEncoding>(4);
  ExpectBijection<v1::TemperatureMode>(2);
  ExpectBijection<v1::TruncationSide>(2);
}

// The server's names ("chunk_mean") are the ones the client derives from the .proto, in the
// .proto's order.
TEST(MessageEnums, StrategyNamesMatchTheProto) {
  std::vector<std::string> wire_names;
  for (v1::LongTextStrategy s : v1::AllStrategies()) wire_names.push_back(v1::StrategyName(s));
  std::vector<std::string> core_names;
  for (Strategy s : AllStrategies()) core_names.push_back(StrategyName(s));
  EXPECT_EQ(core_names, wire_names);
}

TEST(MessageEnums, UndefinedNumbersAreRefusedNamingTheField) {
  auto strategy = FromWire(static_cast<v1::LongTextStrategy>(8), "strategy");
  EXPECT_EQ(strategy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(strategy.status().message()),
              StartsWith("strategy: unknown value 8; allowed 0..7 (LONG_TEXT_STRATEGY_UNSPECIFIED, "
                         "LONG_TEXT_STRATEGY_REJECT, "));
  auto side = FromWire(static_cast<v1::TruncationSide>(-1), "truncation_side");
  EXPECT_EQ(side.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(side.status().message()),
              StartsWith("truncation_side: unknown value -1; allowed 0..2"));
}

// ToEmbedCall refuses each enum field by its name (outputs by index) and maps the rest.
TEST(MessageEnums, EmbedRequestsMapOrAreRefusedByField) {
  struct Case {
    const char* field;
    void (*spoil)(v1::EmbedRequest*);
  };
  const Case cases[] = {
      {"strategy",
       [](v1::EmbedRequest* r) { r->set_strategy(static_cast<v1::LongTextStrategy>(99)); }},
      {"temperature_mode",
       [](v1::EmbedRequest* r) { r->set_temperature_mode(static_cast<v1::TemperatureMode>(3)); }},
      {"truncation_side",
       [](v1::EmbedRequest* r) { r->set_truncation_side(static_cast<v1::TruncationSide>(7)); }},
      {"outputs[1]",
       [](v1::EmbedRequest* r) {
         r->add_outputs(v1::EMBEDDING_OUTPUT_SPARSE);
         r->add_outputs(static_cast<v1::EmbeddingOutput>(9));
       }},
      {"multi_vector_encoding",
       [](v1::EmbedRequest* r) {
         r->set_multi_vector_encoding(static_cast<v1::VectorEncoding>(-5));
       }},
  };
  for (const Case& c : cases) {
    v1::EmbedRequest request;
    request.add_inputs("text");
    c.spoil(&request);
    auto call = ToEmbedCall(&request, absl::InfiniteFuture());
    EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(call.status().message()),
                StartsWith(absl::StrCat(c.field, ": unknown value ")));
  }

  v1::EmbedRequest request;
  request.add_inputs("text");
  request.set_strategy(v1::LONG_TEXT_STRATEGY_LATE_CHUNKING);
  request.set_truncation_side(v1::TRUNCATION_SIDE_KEEP_END);
  request.set_temperature_mode(v1::TEMPERATURE_MODE_AUTO);
  request.add_outputs(v1::EMBEDDING_OUTPUT_UNSPECIFIED);
  request.add_outputs(v1::EMBEDDING_OUTPUT_MULTI_VECTOR);
  request.set_multi_vector_encoding(v1::VECTOR_ENCODING_INT8);
  auto call = ToEmbedCall(&request, absl::InfiniteFuture());
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->options.strategy, Strategy::kLateChunking);
  EXPECT_EQ(call->options.truncation_side, TruncationSide::kKeepEnd);
  EXPECT_EQ(call->options.temperature_mode, TemperatureMode::kAuto);
  EXPECT_EQ(call->options.outputs, (std::vector<Output>{Output::kDense, Output::kMultiVector}));
  EXPECT_EQ(call->options.multi_vector_encoding, VectorEncoding::kInt8);
  // Refusals the core writes name outputs as a gRPC caller sends them.
  EXPECT_EQ(call->output_spelling(Output::kSparse), "EMBEDDING_OUTPUT_SPARSE");

  v1::EmbedRequest unset;
  unset.add_inputs("text");
  auto defaults = ToEmbedCall(&unset, absl::InfiniteFuture());
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->options.strategy.has_value());
  EXPECT_FALSE(defaults->options.multi_vector_encoding.has_value());
  EXPECT_EQ(defaults->options.temperature_mode, TemperatureMode::kFixed);
  EXPECT_EQ(defaults->options.truncation_side, TruncationSide::kKeepStart);
}

}  // namespace
}  // namespace embedding::server
