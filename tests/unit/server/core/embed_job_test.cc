// The request path after validation, in process: the tiny model's tokenizer, a fake encoder
// behind a real batcher and worker pool. Jobs cancelled or expired at every stage must give
// back every request slot and queued token.
#include "server/core/embed_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <random>

#include "tests/testing/test_models.h"
#include "tests/unit/server/core/fake_encoder.h"

namespace embedding::server {
namespace {

class EmbedJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = model_store::Model::Load(testing::TinyModelDir(), {}).value();
    encoder_ = std::make_unique<testing::FakeEncoder>(model_->config().hidden_size,
                                                      absl::Microseconds(300));
    BatcherOptions options;
    options.max_batch_tokens = 512;
    batcher_ = std::make_unique<Batcher>(
        [this](const model_store::EncodeBatch& b) { return encoder_->Encode(b); },
        model_->pooling(), options, &pool_);
  }

  // Starts a job for `inputs` with `strategy`; `deadline` bounds it.
  std::shared_ptr<EmbedJob> StartJob(std::vector<std::string> inputs, Strategy strategy,
                                     absl::Time deadline, EmbedJob::DoneCallback done) {
    auto permit = admission_.Admit();
    EXPECT_TRUE(permit.ok());
    EmbedJob::Request request;
    request.model = model_.get();
    request.batcher = batcher_.get();
    request.params.SetStrategy(strategy);
    request.params.chunk_tokens = 16;
    request.params.temperature = 0.7f;
    request.inputs = std::move(inputs);
    request.deadline = deadline;
    request.max_tokens_per_document = 100000;
    request.permit = *std::move(permit);
    return EmbedJob::Start(std::move(request), &pool_, std::move(done));
  }

  // Lets every queued piece of work finish, then reads the books.
  void ExpectEverythingReturned() {
    for (int i = 0; i < 200 && (batcher_->queued_tasks() > 0 || admission_.queued_tokens() > 0);
         ++i) {
      pool_.WaitIdle();
      absl::SleepFor(absl::Milliseconds(10));
    }
    pool_.WaitIdle();
    EXPECT_EQ(admission_.in_flight_requests(), 0);
    EXPECT_EQ(admission_.queued_tokens(), 0);
  }

  Admission admission_{1000, 1 << 22};
  WorkerPool pool_{2};
  std::unique_ptr<model_store::Model> model_;
  std::unique_ptr<testing::FakeEncoder> encoder_;
  std::unique_ptr<Batcher> batcher_;
};

std::string Words(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i % 3 ? " cat" : " the";
  return out;
}

TEST_F(EmbedJobTest, CompletesOnceWithEveryDocumentMergedInOrder) {
  std::promise<absl::StatusOr<EmbedResult>> done;
  StartJob({Words(5), Words(100), ""}, Strategy::kChunkAll, absl::InfiniteFuture(),
           [&](absl::StatusOr<EmbedResult> r) { done.set_value(std::move(r)); });
  auto result = done.get_future().get();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->documents.size(), 3u);
  EXPECT_EQ(result->documents[0].token_count, 5u);
  EXPECT_EQ(result->documents[1].chunk_count, (100 + 15) / 16);
  EXPECT_EQ(result->documents[1].chunks.size(), result->documents[1].chunk_count);
  EXPECT_EQ(result->documents[2].token_count, 0u);
  EXPECT_FLOAT_EQ(result->documents[0].temperature, 0.7f);
  ExpectEverythingReturned();
}

// A rerank's pairs, [CLS] query [SEP] chunk [SEP]: every chunk of every document shares its
// query part, which reaches the model as each sequence's prefix (a causal model computes it
// once per batch); what follows it is the chunk's own.
TEST_F(EmbedJobTest, APairsQueryPartReachesTheModelAsItsSharedPrefix) {
  auto permit = admission_.Admit();
  ASSERT_TRUE(permit.ok());
  EmbedJob::Request request;
  request.model = model_.get();
  request.batcher = batcher_.get();
  request.params.SetStrategy(Strategy::kChunkMax);
  request.params.chunk_tokens = 16;
  request.inputs = std::vector<std::string>{Words(40), Words(3)};
  request.inputs_field = "documents";
  request.pairs = PairFirsts{{"owls hunt at night"}, "query", ""};
  request.max_tokens_per_document = 100000;
  request.permit = *std::move(permit);
  std::promise<absl::StatusOr<EmbedResult>> done;
  EmbedJob::Start(std::move(request), &pool_,
                  [&](absl::StatusOr<EmbedResult> r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(done.get_future().get().ok());
  const std::vector<int32_t> query = model_->tokenizer().Tokenize("owls hunt at night")->ids;
  std::vector<int32_t> part = {model_->tokenizer().EncodePair(query, {}).ids};
  part.resize(query.size() + 2);  // [CLS] query [SEP]
  const auto batches = encoder_->batches();
  const auto prefixes = encoder_->prefix_lengths();
  ASSERT_EQ(batches.size(), prefixes.size());
  size_t sequences = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    ASSERT_EQ(prefixes[b].size(), batches[b].size());
    for (size_t s = 0; s < batches[b].size(); ++s, ++sequences) {
      ASSERT_EQ(prefixes[b][s], static_cast<int32_t>(part.size()));
      EXPECT_EQ(std::vector<int32_t>(batches[b][s].begin(), batches[b][s].begin() + prefixes[b][s]),
                part);
    }
  }
  EXPECT_EQ(sequences, 3u + 1u);  // 40 tokens in chunks of 16, then 3
  ExpectEverythingReturned();
}

TEST_F(EmbedJobTest, RefusedQueueSpaceCompletesWithResourceExhaustedAndReturnsTheSlot) {
  Admission small(10, 50);
  auto permit = small.Admit();
  auto hog = permit->ReserveTokens(40);  // someone else's queued tokens
  EmbedJob::Request request;
  request.model = model_.get();
  request.batcher = batcher_.get();
  request.params.chunk_tokens = 16;
  request.inputs = TextInputs{Words(30)};
  request.max_tokens_per_document = 1000;
  request.permit = *small.Admit();
  std::promise<absl::Status> done;
  EmbedJob::Start(std::move(request), &pool_,
                  [&](absl::StatusOr<EmbedResult> r) { done.set_value(r.status()); });
  EXPECT_EQ(done.get_future().get().code(), absl::StatusCode::kResourceExhausted);
  pool_.WaitIdle();
  EXPECT_EQ(small.in_flight_requests(), 1);  // only the hog's
  EXPECT_EQ(small.queued_tokens(), 40);
}

// Cancellations and deadlines landing while the job is queued for preparation, tokenising,
// queued in the batcher, batched and being merged.
TEST_F(EmbedJobTest, CancellationAndDeadlinesAtEveryStageReturnEverySlotAndToken) {
  std::mt19937 rng(11);
  std::atomic<int> completed{0};
  std::vector<std::shared_ptr<EmbedJob>> jobs;
  constexpr int kJobs = 300;
  for (int i = 0; i < kJobs; ++i) {
    const auto strategy = i % 2 ? Strategy::kLateChunking : Strategy::kChunkMean;
    const absl::Time deadline =
        i % 3 == 0 ? absl::Now() + absl::Microseconds(rng() % 20000) : absl::InfiniteFuture();
    jobs.push_back(StartJob({Words(200 + rng() % 3000)}, strategy, deadline,
                            [&](absl::StatusOr<EmbedResult>) { completed.fetch_add(1); }));
    if (i % 3 == 1) {
      absl::SleepFor(absl::Microseconds(rng() % 2000));
      jobs[rng() % jobs.size()]->Cancel();
    }
  }
  for (auto& job : jobs) job->Cancel();  // whatever is still running
  jobs.clear();
  ExpectEverythingReturned();
  EXPECT_EQ(completed.load(), kJobs);
}

}  // namespace
}  // namespace embedding::server
