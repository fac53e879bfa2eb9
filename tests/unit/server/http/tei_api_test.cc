// Hugging Face TEI's wire format without a server: every request field read into the core's
// call, refusals naming their field, TEI's statuses and error object, and each answer body
// (embed, embed_sparse, embed_all, tokenize, info) rebuilt here from the values it was given.
#include "server/http/tei_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "server/core/chunk_planner.h"
#include "tests/testing/test_models.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

// Small bounds, so each refusal is a short body away.
const RequestLimits kLimits = [] {
  RequestLimits limits;
  limits.max_request_bytes = 1000;
  limits.max_inputs_per_request = 3;
  return limits;
}();

EmbedCall ParseEmbed(const std::string& body, TeiRoute route = TeiRoute::kEmbed) {
  auto call = ParseTeiEmbedRequest(body, route, kLimits);
  EXPECT_TRUE(call.ok()) << body << ": " << call.status();
  return call.ok() ? *std::move(call) : EmbedCall{};
}

void ExpectRefused(const std::string& body, const std::string& field) {
  auto call = ParseTeiEmbedRequest(body, TeiRoute::kEmbed, kLimits);
  ASSERT_FALSE(call.ok()) << body;
  EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
  EXPECT_THAT(std::string(call.status().message()), ::testing::StartsWith(field + ": ")) << body;
  // A body the core never saw is TEI's 422, in its error object.
  EXPECT_EQ(TeiHttpStatus(call.status(), /*body_error=*/true), 422);
  EXPECT_EQ(Json::parse(TeiErrorBody(call.status()))["error_type"], "Validation");
}

TEST(TeiRequest, EmbedReadsEveryField) {
  EmbedCall one = ParseEmbed(R"({"inputs": "a b"})");
  EXPECT_EQ(std::get<TextInputs>(one.inputs), TextInputs{"a b"});
  // TEI refuses long text unless asked to truncate: REJECT, and the start kept.
  EXPECT_EQ(one.options.strategy, Strategy::kReject);
  EXPECT_EQ(one.options.truncation_side, TruncationSide::kKeepStart);
  EXPECT_FALSE(one.options.normalize.has_value());
  EXPECT_FALSE(one.options.dimensions.has_value());
  EXPECT_EQ(one.options.model, "");  // TEI serves one model: the default

  EmbedCall all = ParseEmbed(
      R"({"inputs": ["x", ""], "truncate": true, "truncation_direction": "Left",
          "normalize": false, "dimensions": 8, "prompt_name": "query", "unknown": [1]})");
  EXPECT_EQ(std::get<TextInputs>(all.inputs), (TextInputs{"x", ""}));
  EXPECT_EQ(all.options.strategy, Strategy::kTruncate);
  EXPECT_EQ(all.options.truncation_side, TruncationSide::kKeepEnd);
  EXPECT_EQ(all.options.normalize, std::optional<bool>(false));
  EXPECT_EQ(all.options.dimensions, std::optional<uint32_t>(8));
  EXPECT_EQ(all.options.prompt_name, "query");
  // /embed asks for the dense output by name: a SPLADE model, which has none, refuses it.
  EXPECT_EQ(all.options.outputs, std::vector<Output>{Output::kDense});
  EXPECT_FALSE(all.options.token_states);

  EmbedCall right = ParseEmbed(R"({"inputs": "x", "truncation_direction": "right",
                                   "truncate": null, "dimensions": null})");
  EXPECT_EQ(right.options.truncation_side, TruncationSide::kKeepStart);
  EXPECT_EQ(right.options.strategy, Strategy::kReject);
}

TEST(TeiRequest, EachRouteAsksForItsOutput) {
  EmbedCall sparse = ParseEmbed(R"({"inputs": "x", "truncate": true})", TeiRoute::kEmbedSparse);
  EXPECT_EQ(sparse.options.outputs, std::vector<Output>{Output::kSparse});
  EXPECT_EQ(sparse.options.strategy, Strategy::kTruncate);
  EmbedCall states = ParseEmbed(R"({"inputs": "x"})", TeiRoute::kEmbedAll);
  EXPECT_TRUE(states.options.token_states);
  EXPECT_TRUE(states.options.outputs.empty());
  // normalize and dimensions belong to /embed only: elsewhere they are ignored, as TEI does.
  EmbedCall ignored =
      ParseEmbed(R"({"inputs": "x", "normalize": "no", "dimensions": -1})", TeiRoute::kEmbedAll);
  EXPECT_FALSE(ignored.options.normalize.has_value());
}

// TempScale and task adapters on every TEI embed route, as /v1/embeddings spells them; what
// neither TEI nor this server defines is ignored and named, so it can be counted.
TEST(TeiRequest, EveryEmbedRouteTakesTauAndTaskAndNamesWhatItIgnores) {
  for (TeiRoute route : {TeiRoute::kEmbed, TeiRoute::kEmbedSparse, TeiRoute::kEmbedAll}) {
    std::vector<std::string> ignored;
    auto call = ParseTeiEmbedRequest(
        R"({"inputs": "x", "temperature": 0.5, "temperature_mode": "auto",
            "task": "retrieval.query", "bogus": 1, "truncate": true})",
        route, kLimits, &ignored);
    ASSERT_TRUE(call.ok()) << call.status();
    EXPECT_EQ(call->options.temperature, std::optional<float>(0.5f));
    EXPECT_EQ(call->options.temperature_mode, TemperatureMode::kAuto);
    EXPECT_EQ(call->options.task, "retrieval.query");
    EXPECT_EQ(ignored, std::vector<std::string>{"bogus"});
  }
  // A route's own field is not ignored; another route's is.
  std::vector<std::string> ignored;
  ASSERT_TRUE(ParseTeiEmbedRequest(R"({"inputs": "x", "normalize": true, "sparse_top_k": 2})",
                                   TeiRoute::kEmbed, kLimits, &ignored)
                  .ok());
  EXPECT_EQ(ignored, std::vector<std::string>{"sparse_top_k"});
  EmbedCall plain = ParseEmbed(R"({"inputs": "x", "temperature": null, "task": null})");
  EXPECT_FALSE(plain.options.temperature.has_value());
  EXPECT_EQ(plain.options.temperature_mode, TemperatureMode::kFixed);
  EXPECT_EQ(plain.options.task, "");
}

TEST(TeiRequest, RefusalsNameTheirField) {
  ExpectRefused(R"({"inputs": "a", "temperature": "cold"})", "temperature");
  ExpectRefused(R"({"inputs": "a", "temperature_mode": "hot"})", "temperature_mode");
  ExpectRefused(R"({"inputs": "a", "task": 7})", "task");
  ExpectRefused(R"({})", "inputs");
  ExpectRefused(R"({"inputs": 5})", "inputs");
  ExpectRefused(R"({"inputs": []})", "inputs");
  ExpectRefused(R"({"inputs": ["a", "b", "c", "d"]})", "inputs");  // over the bound of 3
  ExpectRefused(R"({"inputs": ["a", 7]})", "inputs[1]");
  ExpectRefused(R"({"inputs": "a", "truncate": "yes"})", "truncate");
  ExpectRefused(R"({"inputs": "a", "truncation_direction": "up"})", "truncation_direction");
  ExpectRefused(R"({"inputs": "a", "truncation_direction": 1})", "truncation_direction");
  ExpectRefused(R"({"inputs": "a", "normalize": 1})", "normalize");
  ExpectRefused(R"({"inputs": "a", "dimensions": -1})", "dimensions");
  ExpectRefused(R"({"inputs": "a", "dimensions": 4294967296})", "dimensions");
  ExpectRefused(R"({"inputs": "a", "prompt_name": 3})", "prompt_name");
  ExpectRefused(R"(["a"])", "body");
  ExpectRefused(R"({"inputs": "a")", "body");
  // A string past the per-text byte bound is refused before the body is parsed.
  RequestLimits small = kLimits;
  small.max_tokens_per_document = 2;  // 32 bytes per text
  auto long_text = ParseTeiEmbedRequest(R"({"inputs": ")" + std::string(40, 'a') + R"("})",
                                        TeiRoute::kEmbed, small);
  ASSERT_FALSE(long_text.ok());
  EXPECT_THAT(std::string(long_text.status().message()), HasSubstr("inputs: a string of 40 bytes"));
}

TEST(TeiRequest, TokenizeReadsInputsAndSpecialTokens) {
  auto call = ParseTeiTokenizeRequest(R"({"inputs": ["a", "b"]})", kLimits);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->inputs, (TextInputs{"a", "b"}));
  EXPECT_TRUE(call->add_special_tokens);
  auto bare = ParseTeiTokenizeRequest(R"({"inputs": "a", "add_special_tokens": false})", kLimits);
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->add_special_tokens);
  auto bad = ParseTeiTokenizeRequest(R"({"inputs": "a", "add_special_tokens": 0})", kLimits);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::StartsWith("add_special_tokens: "));
}

TEST(TeiErrors, StatusesAndErrorTypesAsTeiSendsThem) {
  const absl::Status invalid = absl::InvalidArgumentError("inputs[0]: too long");
  EXPECT_EQ(TeiHttpStatus(invalid, false), 413);  // the core refused it: TEI's Validation
  EXPECT_EQ(TeiHttpStatus(invalid, true), 422);   // the body itself
  const struct {
    absl::Status status;
    int http;
    const char* type;
  } cases[] = {{absl::UnauthenticatedError("x"), 401, "Validation"},
               {absl::NotFoundError("x"), 404, "Validation"},
               {absl::ResourceExhaustedError("x"), 429, "Overloaded"},
               {absl::UnavailableError("x"), 503, "Unhealthy"},
               {absl::DeadlineExceededError("x"), 504, "Backend"},
               {absl::InternalError("x"), 424, "Backend"},
               {absl::DataLossError("x"), 424, "Backend"}};
  for (const auto& c : cases) {
    EXPECT_EQ(TeiHttpStatus(c.status, false), c.http) << c.status;
    const Json body = Json::parse(TeiErrorBody(c.status));
    EXPECT_EQ(body["error_type"], c.type) << c.status;
    EXPECT_EQ(body["error"], "x");
  }
  // Past the window: the advice names TEI's own field.
  absl::Status past = absl::InvalidArgumentError("inputs[0]: 900 tokens");
  past.SetPayload(kPastWindowPayload, absl::Cord("1"));
  const std::string message = Json::parse(TeiErrorBody(past))["error"];
  EXPECT_THAT(message, HasSubstr("\"truncate\": true"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("LONG_TEXT_STRATEGY")));
}

class TeiAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto served = std::make_shared<ServedModel>();
    served->name = "tiny";
    served->version = "v7";
    served->model = model_store::Model::Load(testing::TinyModelDir(), {}).value();
    // /info reports the budget the model's batcher was given (sized for its device at load).
    BatcherOptions batching;
    batching.max_batch_tokens = 4096;
    served->batcher = std::make_unique<Batcher>(
        [](const model_store::EncodeBatch&) -> absl::StatusOr<model_store::EncodeResult> {
          return absl::UnimplementedError("no forward pass here");
        },
        served->model->pooling(), batching, &completions_);
    hidden_ = static_cast<size_t>(served->model->config().hidden_size);
    model_ = served;
  }
  WorkerPool completions_{1};
  std::shared_ptr<const ServedModel> model_;
  size_t hidden_ = 0;
};

TEST_F(TeiAnswerTest, EmbedBodiesCarryTheResultAsTeiShapesIt) {
  EmbedAnswer answer{model_, {}, {}};
  DocumentResult first, second;
  first.vector = {0.5f, -0.25f};
  first.sparse = {{7, 3}, {1.5f, 0.125f}};
  for (size_t i = 0; i < 2 * hidden_; ++i) first.token_states.push_back(0.5f * i);
  second.vector = {1.0f, 0.0f};
  answer.result.documents = {first, second};

  EXPECT_EQ(Json::parse(TeiEmbedBody(answer, TeiRoute::kEmbed)), Json({{0.5, -0.25}, {1.0, 0.0}}));
  EXPECT_EQ(Json::parse(TeiEmbedBody(answer, TeiRoute::kEmbedSparse)),
            Json({Json::array({{{"index", 7}, {"value", 1.5}}, {{"index", 3}, {"value", 0.125}}}),
                  Json::array()}));
  const Json all = Json::parse(TeiEmbedBody(answer, TeiRoute::kEmbedAll));
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].size(), 2u);  // one row per token, `hidden` wide
  EXPECT_TRUE(all[1].empty());
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(all[0][r].size(), hidden_);
    for (size_t c = 0; c < hidden_; ++c)
      EXPECT_EQ(all[0][r][c].get<float>(), 0.5f * (r * hidden_ + c));
  }
}

TEST_F(TeiAnswerTest, TokenizeGivesEachTokensBytesAndSpecialsWithoutOffsets) {
  const model_store::Tokenizer& tokenizer = model_->model->tokenizer();
  TokenizeAnswer answer;
  answer.model = model_;
  answer.inputs = {"hello world", "b"};
  for (const std::string& text : answer.inputs) answer.tokens.push_back(*tokenizer.Tokenize(text));
  for (bool special : {true, false}) {
    answer.add_special_tokens = special;
    const Json body = Json::parse(TeiTokenizeBody(answer));
    ASSERT_EQ(body.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const auto& t = answer.tokens[i];
      const std::vector<int32_t> expected_ids = special ? tokenizer.AddSpecialTokens(t.ids) : t.ids;
      ASSERT_EQ(body[i].size(), expected_ids.size());
      const size_t prefix = special ? model_->model->special_prefix().size() : 0;
      for (size_t k = 0; k < expected_ids.size(); ++k) {
        const Json& token = body[i][k];
        EXPECT_EQ(token["id"], expected_ids[k]);
        const bool is_content = k >= prefix && k < prefix + t.ids.size();
        EXPECT_EQ(token["special"], !is_content);
        if (!is_content) {
          EXPECT_TRUE(token["start"].is_null());
          EXPECT_EQ(token["text"], tokenizer.IdToToken(expected_ids[k]));
          continue;
        }
        const auto& span = t.spans[k - prefix];
        EXPECT_EQ(token["start"], span.begin);
        EXPECT_EQ(token["stop"], span.end);
        EXPECT_EQ(token["text"], answer.inputs[i].substr(span.begin, span.end - span.begin));
      }
    }
  }
}

TEST_F(TeiAnswerTest, InfoNamesTheModelAndTheServer) {
  const TeiServerInfo server{32, 3};
  const Json info = Json::parse(TeiInfoBody(*model_, kLimits, server));
  EXPECT_EQ(info["model_id"], "tiny");  // no Hub origin: the served name
  EXPECT_EQ(info["model_sha"], "v7");   // and its version
  EXPECT_EQ(info["model_dtype"], "float32");
  EXPECT_EQ(info["device"], "cpu");
  EXPECT_EQ(info["max_input_length"], model_->model->encoder().max_sequence_length());
  EXPECT_EQ(info["max_batch_tokens"], 4096);
  EXPECT_EQ(info["max_batch_requests"], 32);
  EXPECT_EQ(info["tokenization_workers"], 3);
  EXPECT_EQ(info["max_client_batch_size"], 3);
  EXPECT_EQ(info["version"], EMBEDDING_VERSION);
  EXPECT_TRUE(info["sha"].is_null());
}

}  // namespace
}  // namespace embedding::server
