// The Embedder, the core's one entry point, in process: fixed models (the tiny model's
// tokenizer and config, a fake encoder behind a real batcher), no transport. Text and token-id
// inputs, every status it answers, deadline, cancellation, drain, Tokenize, and the books
// (request slots, queued tokens, active calls) back at zero on every path.
#include "server/core/embedder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "tests/testing/test_models.h"
#include "tests/unit/server/core/fixed_models.h"

namespace embedding::server {
namespace {

using ::testing::HasSubstr;

class EmbedderTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(absl::ZeroDuration(), RequestLimits{}); }

  void Build(absl::Duration per_batch, RequestLimits limits) {
    embedder_.reset();
    models_ = std::make_unique<testing::FixedModels>(&pool_, per_batch);
    CallObserver observer;
    observer.on_embedded = [this](const ServedModel&, const EmbedParams&, const EmbedResult& r) {
      embedded_documents_ += static_cast<int>(r.documents.size());
    };
    observer.on_call_done = [this](const CallRecord& call) { last_call_ = call; };
    embedder_ = std::make_unique<Embedder>(limits, &pool_, std::vector<CallObserver>{observer});
    embedder_->SetReady(models_.get());
  }

  // Starts `call` and waits for its answer; a refusal at the start is returned as it is.
  absl::StatusOr<EmbedAnswer> Embed(EmbedCall call) {
    std::promise<absl::StatusOr<EmbedAnswer>> done;
    auto job = embedder_->StartEmbed(std::move(call), [&](absl::StatusOr<EmbedAnswer> answer) {
      done.set_value(std::move(answer));
    });
    if (!job.ok()) return job.status();
    return done.get_future().get();
  }

  // Starts `call` and waits for its answer; a refusal at the start is returned as it is.
  absl::StatusOr<TokenizeAnswer> Tokenize(TokenizeCall call) {
    std::promise<absl::StatusOr<TokenizeAnswer>> done;
    const absl::Status started = embedder_->StartTokenize(
        std::move(call),
        [&](absl::StatusOr<TokenizeAnswer> answer) { done.set_value(std::move(answer)); });
    if (!started.ok()) return started;
    return done.get_future().get();
  }

  static EmbedCall Texts(TextInputs texts) {
    EmbedCall call;
    call.inputs = std::move(texts);
    return call;
  }

  void ExpectBooksAtZero() {
    for (int i = 0; i < 200 && embedder_->admission().queued_tokens() > 0; ++i) {
      pool_.WaitIdle();
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_EQ(embedder_->admission().in_flight_requests(), 0);
    EXPECT_EQ(embedder_->admission().queued_tokens(), 0);
  }

  WorkerPool pool_{2};
  std::unique_ptr<testing::FixedModels> models_;
  std::unique_ptr<Embedder> embedder_;
  std::atomic<int> embedded_documents_{0};
  CallRecord last_call_;
};

TEST_F(EmbedderTest, TextInputsAreTokenisedMergedAndObserved) {
  EmbedCall call = Texts({"the cat sat", ""});
  call.options.temperature = 0.5f;
  auto answer = Embed(std::move(call));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->model->name, "tiny");
  EXPECT_EQ(answer->model->version, "1");
  EXPECT_FLOAT_EQ(answer->params.temperature, 0.5f);
  ASSERT_EQ(answer->result.documents.size(), 2u);
  const auto expected = models_->model().tokenizer().Tokenize("the cat sat", "x").value();
  EXPECT_EQ(answer->result.documents[0].token_count, expected.ids.size());
  EXPECT_EQ(answer->result.documents[1].token_count, 0u);
  EXPECT_EQ(embedded_documents_.load(), 2);
  ExpectBooksAtZero();
}

TEST_F(EmbedderTest, TokenIdInputsSkipTheTokenizerAndAreCheckedAgainstTheVocabulary) {
  EmbedCall call;
  call.inputs = TokenInputs{{5, 6, 7}, {}};
  auto answer = Embed(std::move(call));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->result.documents[0].token_count, 3u);
  EXPECT_EQ(answer->result.documents[1].token_count, 0u);

  const int64_t vocab = models_->model().config().vocab_size;
  EmbedCall bad;
  bad.inputs = TokenInputs{{1}, {2, 3, static_cast<int32_t>(vocab)}};
  auto refused = Embed(std::move(bad));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("inputs[1][2]: token id"));
  EXPECT_THAT(refused.status().message(), HasSubstr(absl::StrCat("[0, ", vocab - 1, "]")));
  ExpectBooksAtZero();
}

TEST_F(EmbedderTest, EveryRefusalBeforeAdmissionHasItsCodeAndField) {
  EmbedCall unknown = Texts({"a"});
  unknown.options.model = "nope";
  EXPECT_EQ(Embed(std::move(unknown)).status().code(), absl::StatusCode::kNotFound);

  EmbedCall hot = Texts({"a"});
  hot.options.temperature = 9.0f;
  auto refused = Embed(std::move(hot));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("temperature: 9"));

  EXPECT_EQ(Embed(Texts({})).status().code(), absl::StatusCode::kInvalidArgument);

  RequestLimits one_slot;
  one_slot.max_concurrent_requests = 1;
  Build(absl::Milliseconds(200), one_slot);
  std::promise<absl::StatusOr<EmbedAnswer>> first;
  auto running = embedder_->StartEmbed(
      Texts({"slow"}), [&](absl::StatusOr<EmbedAnswer> a) { first.set_value(std::move(a)); });
  ASSERT_TRUE(running.ok());
  auto full = Embed(Texts({"b"}));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(first.get_future().get().ok());
  ExpectBooksAtZero();
}

TEST_F(EmbedderTest, LoadingAndDrainingAreUnavailable) {
  Embedder loading(RequestLimits{}, &pool_);
  EXPECT_EQ(loading.StartEmbed(Texts({"a"}), [](auto) {}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(loading.CurrentModels().status().code(), absl::StatusCode::kUnavailable);
  embedder_->StartDraining();
  auto refused = Embed(Texts({"a"}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("draining"));
  EXPECT_EQ(embedder_->StartTokenize({"", {"a"}}, [](auto) {}).code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(EmbedderTest, DeadlineAndCancellationAnswerOnceAndGiveEverythingBack) {
  Build(absl::Milliseconds(50), RequestLimits{});
  EmbedCall expired = Texts({"a b c"});
  expired.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(Embed(std::move(expired)).status().code(), absl::StatusCode::kDeadlineExceeded);

  std::string long_text;
  for (int i = 0; i < 2000; ++i) long_text += " word";
  std::atomic<int> answers{0};
  std::promise<absl::Status> done;
  auto job = embedder_->StartEmbed(Texts({long_text}), [&](absl::StatusOr<EmbedAnswer> a) {
    if (answers.fetch_add(1) == 0) done.set_value(a.status());
  });
  ASSERT_TRUE(job.ok());
  (*job)->Cancel();
  (*job)->Cancel();  // idempotent
  EXPECT_EQ(done.get_future().get().code(), absl::StatusCode::kCancelled);
  ExpectBooksAtZero();
  EXPECT_EQ(answers.load(), 1);
}

TEST_F(EmbedderTest, TokenizeAnswersTheModelsTokensOrNamesTheInput) {
  auto answer = Tokenize({"", {"the cat", "sat"}, false});
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->add_special_tokens);
  ASSERT_EQ(answer->tokens.size(), 2u);
  EXPECT_EQ(answer->tokens[0].ids,
            models_->model().tokenizer().Tokenize("the cat", "x").value().ids);
  EXPECT_EQ(answer->inputs[1], "sat");

  RequestLimits few_tokens;
  few_tokens.max_tokens_per_document = 3;
  Build(absl::ZeroDuration(), few_tokens);
  auto too_many = Tokenize({"", {"a", "b c d e"}, true});
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_many.status().message(), HasSubstr("inputs[1]: the inputs make more than 3"));
  // Bounded by bytes before any tokenizing: 16 bytes for each of the 3 tokens, per input and
  // per call.
  auto long_input = Tokenize({"", {std::string(49, 'a')}, true});
  EXPECT_EQ(long_input.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(long_input.status().message(),
              HasSubstr("inputs[0]: 49 bytes of text exceed the bound; allowed [0, 48]"));
  auto long_call = Tokenize({"", {std::string(30, 'a'), std::string(30, 'b')}, true});
  EXPECT_EQ(long_call.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(long_call.status().message(),
              HasSubstr("inputs: 60 bytes of text exceed the bound for one Tokenize call; "
                        "allowed [0, 48] (16 bytes for each token --max-tokens-per-document"));
  ExpectBooksAtZero();
}

TEST_F(EmbedderTest, CallsAreCountedAndReportedOnce) {
  embedder_->CallStarted();
  embedder_->CallStarted();
  EXPECT_EQ(embedder_->active_calls(), 2);
  embedder_->CallDone({"Embed", "id-1", absl::StatusCode::kInvalidArgument, "temperature: x", 0.1});
  EXPECT_EQ(embedder_->active_calls(), 1);
  EXPECT_EQ(last_call_.request_id, "id-1");
  EXPECT_EQ(last_call_.code, absl::StatusCode::kInvalidArgument);
  embedder_->CallDone({"Embed", "id-2"});
  EXPECT_EQ(embedder_->active_calls(), 0);
}

}  // namespace
}  // namespace embedding::server
