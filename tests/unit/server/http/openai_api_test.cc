// The OpenAI body reader and answer writer, without a server: input shapes, limits checked
// before anything per input is built, errors naming their param, base64 that decodes to the
// floats, and statuses for each code.
#include "server/http/openai_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

RequestLimits Limits() {
  RequestLimits limits;
  limits.max_inputs_per_request = 4;
  limits.max_request_bytes = 400;  // 100 token ids
  return limits;
}

void ExpectInvalid(const std::string& body, const std::string& param, const std::string& words) {
  auto parsed = ParseOpenAiEmbeddingsRequest(body, Limits());
  ASSERT_FALSE(parsed.ok()) << body;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  const Json error = Json::parse(OpenAiErrorBody(parsed.status()))["error"];
  EXPECT_EQ(error["param"], param) << parsed.status();
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(words));
  EXPECT_EQ(error["type"], "invalid_request_error");
}

TEST(OpenAiRequest, EveryInputShapeAndField) {
  auto one = ParseOpenAiEmbeddingsRequest(R"({"input": "a b", "model": "m"})", Limits());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(std::get<TextInputs>(one->call.inputs), TextInputs{"a b"});
  EXPECT_EQ(one->call.options.model, "m");
  EXPECT_FALSE(one->base64);

  auto texts = ParseOpenAiEmbeddingsRequest(R"({"input": ["a", ""]})", Limits());
  ASSERT_TRUE(texts.ok());
  EXPECT_EQ(std::get<TextInputs>(texts->call.inputs), (TextInputs{"a", ""}));

  auto ids = ParseOpenAiEmbeddingsRequest(R"({"input": [5, 6, 7]})", Limits());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(std::get<TokenInputs>(ids->call.inputs), (TokenInputs{{5, 6, 7}}));

  auto lists = ParseOpenAiEmbeddingsRequest(R"({"input": [[1], [], [2, 3]]})", Limits());
  ASSERT_TRUE(lists.ok());
  EXPECT_EQ(std::get<TokenInputs>(lists->call.inputs), (TokenInputs{{1}, {}, {2, 3}}));

  auto all = ParseOpenAiEmbeddingsRequest(
      R"({"input": "x", "encoding_format": "base64", "dimensions": 8, "user": "u",
          "temperature": 0.5, "strategy": "late_chunking", "truncation_side": "end",
          "chunk_tokens": 64, "chunk_overlap_tokens": 8, "normalize": false,
          "prompt_name": "query"})",
      Limits());
  ASSERT_TRUE(all.ok()) << all.status();
  const EmbedRequestOptions& r = all->call.options;
  EXPECT_TRUE(all->base64);
  EXPECT_EQ(r.dimensions, 8u);
  EXPECT_FLOAT_EQ(r.temperature.value(), 0.5f);
  EXPECT_EQ(r.strategy, Strategy::kLateChunking);
  EXPECT_EQ(r.truncation_side, TruncationSide::kKeepEnd);
  EXPECT_EQ(r.chunk_tokens, 64u);
  EXPECT_EQ(r.chunk_overlap_tokens, 8u);
  EXPECT_EQ(r.normalize, false);
  EXPECT_EQ(r.prompt_name, "query");
  EXPECT_EQ(r.temperature_mode, TemperatureMode::kFixed);

  auto automatic =
      ParseOpenAiEmbeddingsRequest(R"({"input": "x", "temperature_mode": "auto"})", Limits());
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_EQ(automatic->call.options.temperature_mode, TemperatureMode::kAuto);
  // A free-text instruction for a task the model's config does not name.
  auto instructed = ParseOpenAiEmbeddingsRequest(
      R"({"input": "x", "prompt": "Instruct: Find the clause\nQuery:"})", Limits());
  ASSERT_TRUE(instructed.ok()) << instructed.status();
  EXPECT_EQ(instructed->call.options.prompt, "Instruct: Find the clause\nQuery:");
  ExpectInvalid(R"({"input": "x", "prompt": 3})", "prompt", "string");
  // Jina's API names a task adapter (jina-embeddings-v3's) as `task`.
  auto task = ParseOpenAiEmbeddingsRequest(
      R"({"input": "x", "task": "retrieval.query", "dimensions": 64})", Limits());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->call.options.task, "retrieval.query");
  ExpectInvalid(R"({"input": "x", "task": ["retrieval.query"]})", "task", "string");
  auto fixed = ParseOpenAiEmbeddingsRequest(
      R"({"input": "x", "temperature_mode": "fixed", "temperature": 0.9})", Limits());
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->call.options.temperature_mode, TemperatureMode::kFixed);
}

TEST(OpenAiRequest, BadBodiesNameTheirParam) {
  ExpectInvalid("{", "body", "not valid JSON");
  ExpectInvalid("[1]", "body", "must be a JSON object");
  ExpectInvalid(std::string(20, '[') + std::string(20, ']'), "body", "nests deeper than 16");
  ExpectInvalid("{\"input\": \"\xC3\x28\"}", "body", "UTF-8");
  ExpectInvalid(R"({"model": "m"})", "input", "is required");
  ExpectInvalid(R"({"input": []})", "input", "must be a string, an array of strings");
  ExpectInvalid(R"({"input": {"a": 1}})", "input", "must be a string");
  ExpectInvalid(R"({"input": ["a", 2]})", "input[1]", "must be a string like input[0]");
  ExpectInvalid(R"({"input": [[1], "a"]})", "input[1]", "array of token ids");
  ExpectInvalid(R"({"input": [1, -1]})", "input[1]", "token id");
  ExpectInvalid(R"({"input": [1, 2.5]})", "input[1]", "token id");
  ExpectInvalid(R"({"input": [[1, 2147483647]]})", "input[0][1]", "[0, 2147483646]");
  ExpectInvalid(R"({"input": ["a", "b", "c", "d", "e"]})", "input", "[1, 4]");
  ExpectInvalid(R"({"input": "x", "encoding_format": "hex"})", "encoding_format", "base64");
  ExpectInvalid(R"({"input": "x", "dimensions": -3})", "dimensions", "integer");
  ExpectInvalid(R"({"input": "x", "temperature": "hot"})", "temperature", "number");
  ExpectInvalid(R"({"input": "x", "strategy": "sideways"})", "strategy", "sideways");
  ExpectInvalid(R"({"input": "x", "temperature_mode": "AUTO"})", "temperature_mode",
                "\"fixed\" or \"auto\"");
  ExpectInvalid(R"({"input": "x", "temperature_mode": 2})", "temperature_mode", "string");
  ExpectInvalid(R"({"input": "x", "truncation_side": "middle"})", "truncation_side", "start");
  ExpectInvalid(R"({"input": "x", "normalize": 1})", "normalize", "true or false");
  ExpectInvalid(R"({"input": "x", "tempreature": 1})", "tempreature", "unknown field");
}

// 1e300 does not fit a float; narrowing it would be undefined behaviour. It becomes an
// infinity, which validation refuses naming temperature.
TEST(OpenAiRequest, TemperatureBeyondFloatBecomesInfinite) {
  for (const char* body :
       {R"({"input": "x", "temperature": 1e300})", R"({"input": "x", "temperature": -1e300})"}) {
    auto parsed = ParseOpenAiEmbeddingsRequest(body, Limits());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(std::isinf(parsed->call.options.temperature.value())) << body;
  }
}

TEST(OpenAiRequest, TokenIdBoundIsCheckedBeforeCopying) {
  std::string many = "{\"input\": [";
  for (int i = 0; i < 101; ++i) many += (i ? ",1" : "1");
  ExpectInvalid(many + "]}", "input", "101 token ids; allowed [1, 100]");
  std::string forty = "[1";
  for (int i = 1; i < 40; ++i) forty += ",1";
  forty += "]";
  ExpectInvalid("{\"input\": [" + forty + "," + forty + "," + forty + "]}", "input",
                "more than 100 token ids in all");
}

TEST(OpenAiResponse, FloatsAndBase64CarryTheSameVectorAndDetails) {
  auto model = std::make_shared<ServedModel>();
  model->name = "m";
  EmbedAnswer response{model, {}, {}};
  response.result.tokens = 7;
  DocumentResult& doc = response.result.documents.emplace_back();
  doc.vector = {0.5f, -1.25f, 3.0e-8f};
  doc.token_count = 7;
  doc.chunk_count = 1;
  doc.temperature = 0.7f;
  doc.length_bucket = "0-63";
  doc.high_frequency_ratios = {0.25f, 0.75f};
  doc.sequence_temperatures = {0.7f, 0.9f};
  ChunkResult& chunk = doc.chunks.emplace_back();
  chunk.vector = {2.0f};
  chunk.tokens = {0, 7};
  chunk.temperature = 0.9f;

  const Json floats = Json::parse(OpenAiEmbeddingsBody(response, false));
  EXPECT_EQ(floats["object"], "list");
  EXPECT_EQ(floats["model"], "m");
  EXPECT_EQ(floats["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(floats["usage"]["total_tokens"], 7);
  const Json& item = floats["data"][0];
  EXPECT_EQ(item["object"], "embedding");
  EXPECT_EQ(item["index"], 0);
  EXPECT_EQ(item["embedding"].get<std::vector<float>>(),
            (std::vector<float>{0.5f, -1.25f, 3.0e-8f}));
  EXPECT_EQ(item["details"]["token_count"], 7);
  EXPECT_EQ(item["details"]["high_frequency_ratio"], 0.5f);  // the mean over sequences
  EXPECT_EQ(item["details"]["chunks"][0]["token_span"], Json::array({0, 7}));
  EXPECT_EQ(item["details"]["chunks"][0]["temperature"], 0.9f);
  EXPECT_EQ(item["details"]["sequence_temperatures"], Json::array({0.7f, 0.9f}));

  const Json b64 = Json::parse(OpenAiEmbeddingsBody(response, true));
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(b64["data"][0]["embedding"].get<std::string>(), &bytes));
  ASSERT_EQ(bytes.size(), 3 * sizeof(float));
  float decoded[3];
  std::memcpy(decoded, bytes.data(), bytes.size());
  EXPECT_EQ(decoded[0], 0.5f);
  EXPECT_EQ(decoded[1], -1.25f);
  EXPECT_EQ(decoded[2], 3.0e-8f);
}

// The one status rule every HTTP route starts from, and the OpenAI error object over it.
TEST(OpenAiResponse, StatusesAndParams) {
  EXPECT_EQ(HttpStatusOf(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusOf(absl::UnauthenticatedError("x")), 401);
  EXPECT_EQ(HttpStatusOf(absl::NotFoundError("x")), 404);
  EXPECT_EQ(HttpStatusOf(absl::ResourceExhaustedError("x")), 429);
  EXPECT_EQ(HttpStatusOf(absl::UnavailableError("x")), 503);
  EXPECT_EQ(HttpStatusOf(absl::DeadlineExceededError("x")), 504);
  EXPECT_EQ(HttpStatusOf(absl::InternalError("x")), 500);
  EXPECT_EQ(HttpStatusOf(absl::DataLossError("x")), 500);  // reported as INTERNAL
  EXPECT_EQ(Json::parse(OpenAiErrorBody(absl::DataLossError("x")))["error"]["code"], "internal");
  // Error answers carry the headers their status calls for.
  const HttpResponse busy = ErrorAnswer(429, "application/json", "{}");
  EXPECT_THAT(busy.headers,
              ::testing::Contains(std::pair<std::string, std::string>("Retry-After", "1")));
  const HttpResponse denied = ErrorAnswer(401, "application/json", "{}");
  EXPECT_THAT(denied.headers, ::testing::Contains(std::pair<std::string, std::string>(
                                  "WWW-Authenticate", "Bearer")));
  auto param = [](const absl::Status& s) {
    return Json::parse(OpenAiErrorBody(s))["error"]["param"];
  };
  EXPECT_EQ(param(absl::InvalidArgumentError("inputs[2]: invalid UTF-8 at byte 4")), "input[2]");
  EXPECT_EQ(param(absl::NotFoundError("model: 'x' is not served")), "model");
  EXPECT_TRUE(param(absl::ResourceExhaustedError("server busy: 9 requests in flight")).is_null());
  EXPECT_TRUE(param(absl::InvalidArgumentError("--max-request-bytes: x")).is_null());
}

}  // namespace
}  // namespace embedding::server
