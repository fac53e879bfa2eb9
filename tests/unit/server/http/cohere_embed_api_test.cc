// Cohere's /v2/embed body reader without a server: what each field becomes in the core's call,
// which names refusals use, and every refusal naming its param. The answer's vectors are checked
// against numpy by tests/e2e/cohere_embed_test.py.
#include "server/http/cohere_embed_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

RequestLimits Limits() {
  RequestLimits limits;
  limits.max_inputs_per_request = 3;
  limits.max_request_bytes = 4000;
  return limits;
}

void ExpectInvalid(const std::string& body, const std::string& param, const std::string& words) {
  auto parsed = ParseCohereEmbed(body, Limits());
  ASSERT_FALSE(parsed.ok()) << body;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  const Json error = Json::parse(CohereErrorBody(parsed.status()))["error"];
  EXPECT_EQ(error["param"], param) << parsed.status();
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(words)) << body;
}

TEST(CohereEmbedRequest, TextsAndDefaults) {
  auto parsed = ParseCohereEmbed(R"({"model": "m", "texts": ["a", "b c"]})", Limits());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const EmbedCall& call = parsed->call;
  EXPECT_EQ(std::get<TextInputs>(call.inputs), (TextInputs{"a", "b c"}));
  EXPECT_EQ(call.options.model, "m");
  // truncate defaults to END: keep the start.
  EXPECT_EQ(call.options.strategy, Strategy::kTruncate);
  EXPECT_EQ(call.options.truncation_side, TruncationSide::kKeepStart);
  EXPECT_EQ(call.options.outputs, std::vector<Output>{Output::kDense});
  EXPECT_STREQ(call.inputs_field, "texts");
  EXPECT_STREQ(call.outputs_field, "embedding_types");
  EXPECT_STREQ(call.dimensions_field, "output_dimension");
  EXPECT_EQ(call.output_spelling(Output::kDense), "float");
  EXPECT_FALSE(call.options.input_type.has_value());
  EXPECT_TRUE(parsed->ignored_fields.empty());
}

TEST(CohereEmbedRequest, InputsTruncateAndRanges) {
  auto parsed = ParseCohereEmbed(
      R"({"inputs": [{"content": [{"type": "text", "text": "q"}]}], "truncate": "START",
          "input_type": "search_query", "max_tokens": 16, "output_dimension": 8,
          "embedding_types": ["int8", "ubinary"], "priority": 3, "temperature": 0.5})",
      Limits());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const EmbedCall& call = parsed->call;
  EXPECT_EQ(std::get<TextInputs>(call.inputs), TextInputs{"q"});
  EXPECT_STREQ(call.inputs_field, "inputs");
  EXPECT_EQ(call.options.truncation_side, TruncationSide::kKeepEnd);
  EXPECT_EQ(call.options.input_type, InputType::kSearchQuery);
  EXPECT_EQ(call.options.max_tokens, 16u);
  EXPECT_EQ(call.options.dimensions, 8u);
  EXPECT_EQ(call.options.temperature, 0.5f);
  EXPECT_EQ(parsed->ignored_fields, std::vector<std::string>{"priority"});

  auto none = ParseCohereEmbed(R"({"texts": ["a"], "truncate": "NONE"})", Limits());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->call.options.strategy, Strategy::kReject);

  // A chunking strategy handles long text itself; truncate left out does not contradict it.
  auto chunked = ParseCohereEmbed(R"({"texts": ["a"], "strategy": "chunk_mean"})", Limits());
  ASSERT_TRUE(chunked.ok()) << chunked.status();
  EXPECT_EQ(chunked->call.options.strategy, Strategy::kChunkMean);
}

TEST(CohereEmbedRequest, BadBodiesNameTheirParam) {
  ExpectInvalid(R"({"model": "m"})", "texts", "required");
  ExpectInvalid(R"({"texts": "a"})", "texts", "array of strings");
  ExpectInvalid(R"({"texts": ["a", "b", "c", "d"]})", "texts", "--max-inputs-per-request");
  ExpectInvalid(R"({"texts": ["a", 5]})", "texts[1]", "string");
  ExpectInvalid(R"({"texts": ["a"], "inputs": []})", "texts", "not both");
  ExpectInvalid(R"({"inputs": [{}, {}, {}, {}]})", "inputs", "4 inputs; allowed [1, 3]");
  ExpectInvalid(R"({"inputs": [{"content": []}]})", "inputs[0].content", "exactly one");
  ExpectInvalid(R"({"inputs": [{"content": [{"type": "image_url", "image_url": {}}]}]})",
                "inputs[0].content[0]", "not images");
  ExpectInvalid(R"({"images": ["data:"]})", "images", "embeds text");
  ExpectInvalid(R"({"texts": ["a"], "input_type": "image"})", "input_type", "embeds text");
  ExpectInvalid(R"({"texts": ["a"], "input_type": "search_queries"})", "input_type",
                "search_query");
  ExpectInvalid(R"({"texts": ["a"], "embedding_types": []})", "embedding_types", "1 to 6");
  ExpectInvalid(R"({"texts": ["a"], "embedding_types": ["float", "bits"]})",
                "embedding_types[1]", "ubinary");
  ExpectInvalid(R"({"texts": ["a"], "embedding_types": ["int8", "int8"]})",
                "embedding_types[1]", "twice");
  ExpectInvalid(R"({"texts": ["a"], "truncate": "end"})", "truncate", "NONE");
  ExpectInvalid(R"({"texts": ["a"], "truncate": "NONE", "strategy": "chunk_mean"})", "truncate",
                "contradicts");
  ExpectInvalid(R"({"texts": ["a"], "truncation_side": "left"})", "truncation_side", "START");
  ExpectInvalid(R"({"texts": ["a"], "max_tokens": -1})", "max_tokens", "");
  ExpectInvalid(R"({"texts": ["a"], "output_dimension": "8"})", "output_dimension", "");
  ExpectInvalid(R"({"texts": ["a"], "priority": "high"})", "priority", "integer");
  ExpectInvalid(R"({"texts": ["a"], "embedding_type": ["float"]})", "embedding_type",
                "unknown field");
}

}  // namespace
}  // namespace embedding::server
