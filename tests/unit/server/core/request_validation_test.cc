// Request validation, table-driven over every field and bound: INVALID_ARGUMENT naming the
// field; and the defaults a valid request resolves to.
#include "server/core/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/testing/test_models.h"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

class RequestValidationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = model_store::Model::Load(testing::TinyModelDir(), {}).value().release();
  }
  static EmbedCall Valid() {
    EmbedCall call;
    call.inputs = TextInputs{"hello"};
    return call;
  }
  static model_store::Model* model_;
  RequestLimits limits_;
};
model_store::Model* RequestValidationTest::model_ = nullptr;

TextInputs& Texts(EmbedCall* call) { return std::get<TextInputs>(call->inputs); }

struct Case {
  const char* name;
  std::function<void(EmbedCall*, RequestLimits*)> change;
  const char* message;  // the field, and what is allowed
};

TEST_F(RequestValidationTest, EveryFieldAndBoundIsCheckedAndNamed) {
  const auto window = static_cast<uint32_t>(model_->max_content_tokens());
  const auto hidden = static_cast<uint32_t>(model_->config().hidden_size);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<Case> cases = {
      {"no inputs", [](auto* r, auto*) { Texts(r).clear(); }, "inputs: at least one"},
      {"too many inputs",
       [](auto* r, auto* l) {
         l->max_inputs_per_request = 2;
         Texts(r).push_back("b");
         Texts(r).push_back("c");
       },
       "inputs: 3 inputs exceed the bound; allowed [1, 2] (--max-inputs-per-request)"},
      {"too many bytes", [](auto* r, auto* l) { l->max_request_bytes = 4; },
       "inputs: 5 bytes of text exceed the bound; allowed [0, 4] (--max-request-bytes)"},
      {"one input past its byte bound",
       [](auto* r, auto* l) {
         l->max_tokens_per_document = 1;  // 16 bytes of text
         Texts(r).push_back(std::string(17, 'x'));
       },
       "inputs[1]: 17 bytes of text exceed the bound; allowed [0, 16] (16 bytes for each token "
       "--max-tokens-per-document allows)"},
      {"prompt bytes count per input",
       [](auto* r, auto* l) {
         l->max_request_bytes = 11;
         r->options.prompt = "query: ";
       },
       "inputs and prompt: 12 bytes"},
      {"no token-id inputs", [](auto* r, auto*) { r->inputs = TokenInputs{}; },
       "inputs: at least one"},
      {"too many token ids",
       [](auto* r, auto* l) {
         l->max_request_bytes = 8;
         r->inputs = TokenInputs{{1, 2}, {3}};
       },
       "inputs: 3 token ids exceed the bound; allowed [0, 2] (--max-request-bytes / 4)"},
      {"temperature NaN", [&](auto* r, auto*) { r->options.temperature = nan; },
       "temperature: nan"},
      {"temperature inf", [&](auto* r, auto*) { r->options.temperature = inf; },
       "temperature: inf"},
      {"temperature low", [](auto* r, auto*) { r->options.temperature = 0.01f; },
       "temperature: 0.01 is not allowed; must be finite and in [0.05, 4]"},
      {"temperature high", [](auto* r, auto*) { r->options.temperature = 4.5f; },
       "temperature: 4.5"},
      {"chunk_tokens 0", [](auto* r, auto*) { r->options.chunk_tokens = 0; },
       "chunk_tokens: 0 is outside the model's window; allowed [1, "},
      {"chunk_tokens above window", [&](auto* r, auto*) { r->options.chunk_tokens = window + 1; },
       "chunk_tokens: "},
      {"overlap equals chunk",
       [](auto* r, auto*) {
         r->options.chunk_tokens = 8;
         r->options.chunk_overlap_tokens = 8;
       },
       "chunk_overlap_tokens: 8 must be less than chunk_tokens (8); allowed [0, 7]"},
      {"dimensions 0", [](auto* r, auto*) { r->options.dimensions = 0; },
       "dimensions: 0 is outside the model's size; allowed [1, "},
      {"dimensions above hidden", [&](auto* r, auto*) { r->options.dimensions = hidden + 1; },
       "dimensions: "},
      {"prompt and prompt_name",
       [](auto* r, auto*) {
         r->options.prompt = "x: ";
         r->options.prompt_name = "query";
       },
       "prompt_name: set either prompt or prompt_name"},
      {"unknown prompt_name", [](auto* r, auto*) { r->options.prompt_name = "nope"; },
       "prompt_name: 'nope' is not one of the model's prompts [passage, query]"},
      {"output twice",
       [](auto* r, auto*) {
         r->options.outputs = {Output::kDense, Output::kDense};
       },
       "outputs[1]: dense is asked for twice; each output at most once"},
      {"output without its head", [](auto* r, auto*) { r->options.outputs = {Output::kSparse}; },
       "outputs[0]: sparse needs a head this model lacks (sparse_linear or a SPLADE head); it "
       "offers [dense]"},
      {"multi-vector without its head",
       [](auto* r, auto*) {
         r->options.outputs = {Output::kDense, Output::kMultiVector};
       },
       "outputs[1]: multi_vector needs a head this model lacks (colbert_linear)"},
      {"max_vectors without multi-vectors", [](auto* r, auto*) { r->options.max_vectors = 4; },
       "max_vectors: applies only when outputs include multi_vector"},
      {"encoding without multi-vectors",
       [](auto* r, auto*) { r->options.multi_vector_encoding = VectorEncoding::kFloat32; },
       "multi_vector_encoding: applies only when outputs include multi_vector"},
      {"token states past one window",
       [](auto* r, auto*) {
         r->options.token_states = true;
         r->options.strategy = Strategy::kChunkMean;
       },
       "strategy: token states come from one window; allowed REJECT or TRUNCATE"},
  };
  for (const Case& c : cases) {
    EmbedCall call = Valid();
    RequestLimits limits;
    c.change(&call, &limits);
    auto params = ValidateEmbedCall(call, *model_, limits);
    EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(params.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST_F(RequestValidationTest, ValidRequestResolvesDefaults) {
  limits_.default_strategy = Strategy::kLateChunking;
  limits_.default_temperature = 0.9f;
  auto params = ValidateEmbedCall(Valid(), *model_, limits_);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->strategy, Strategy::kLateChunking);
  EXPECT_FLOAT_EQ(params->temperature, 0.9f);
  EXPECT_EQ(params->chunk_tokens, model_->max_content_tokens());
  EXPECT_EQ(params->overlap_tokens, 0u);
  EXPECT_TRUE(params->normalize);
  EXPECT_FALSE(params->keep_end);

  EmbedCall call = Valid();
  call.options.prompt_name = "query";
  call.options.truncation_side = TruncationSide::kKeepEnd;
  call.options.strategy = Strategy::kTruncate;
  call.options.temperature = 0.05f;  // the bounds are inclusive
  params = ValidateEmbedCall(call, *model_, limits_);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->prompt, "query: ");
  EXPECT_TRUE(params->keep_end);
  EXPECT_EQ(params->strategy, Strategy::kTruncate);
}

// The core's refusals name an output as the caller's door spells it.
TEST_F(RequestValidationTest, OutputsAreNamedInTheDoorsSpelling) {
  EmbedCall call = Valid();
  call.options.outputs = {Output::kSparse};
  call.output_spelling = [](Output o) { return "<" + OutputName(o) + ">"; };
  auto params = ValidateEmbedCall(call, *model_, limits_);
  EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(params.status().message(),
              HasSubstr("outputs[0]: <sparse> needs a head this model lacks (sparse_linear or a "
                        "SPLADE head); it offers [<dense>]"));
}

TEST(StrategyNames, RoundTripAndListEveryName) {
  EXPECT_EQ(StrategyName(Strategy::kChunkWeightedMean), "chunk_weighted_mean");
  EXPECT_EQ(AllStrategies().size(), 7u);
  for (Strategy s : AllStrategies()) EXPECT_EQ(ParseStrategyName(StrategyName(s), "f").value(), s);
  auto bad = ParseStrategyName("fastest", "--default_strategy");
  EXPECT_THAT(bad.status().message(), HasSubstr("--default_strategy: 'fastest'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("late_chunking"));
}

}  // namespace
}  // namespace embedding::server
