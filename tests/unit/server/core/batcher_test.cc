// The batcher with a fake encoder: completions on a worker, fairness between a huge and a
// short submission, the padding bound, dropping dead work, retrying in halves after running
// out of memory, shutdown with work queued, and background work yielding to interactive.
#include "server/core/batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/core/worker_pool.h"
#include "tests/unit/server/core/fake_encoder.h"

namespace embedding::server {
namespace {

struct Recorder {
  std::mutex mu;
  std::vector<absl::StatusOr<SequenceOutput>> results;
  std::vector<std::thread::id> threads;
  std::promise<void> all_done;
  size_t expected = 0;

  BatchTask Task(std::vector<int32_t> ids, std::function<absl::Status()> liveness = nullptr) {
    BatchTask task;
    task.ids = std::move(ids);
    task.temperature = 0.5f;
    task.liveness = liveness ? liveness : [] { return absl::OkStatus(); };
    const size_t index = results.size();
    results.emplace_back(absl::UnknownError("not completed"));
    threads.emplace_back();
    ++expected;
    task.done = [this, index](absl::StatusOr<SequenceOutput> out) {
      std::lock_guard<std::mutex> lock(mu);
      results[index] = std::move(out);
      threads[index] = std::this_thread::get_id();
      if (--expected == 0) all_done.set_value();
    };
    return task;
  }
};

std::vector<int32_t> Ids(int length, int32_t first) {
  std::vector<int32_t> ids(length, 7);
  ids[0] = first;
  return ids;
}

// With `memory_tokens` set, a batch of more padded tokens than that runs out of memory, as
// the encoder reports it (model_store/encoder/forward_failure.h), without reaching the fake.
// Every forward pass's stats, as the batcher reports them (from its own thread).
struct StatsLog {
  Batcher::BatchObserver Observer() {
    return [this](const BatchStats& s) {
      std::lock_guard<std::mutex> lock(mu);
      stats.push_back(s);
    };
  }
  std::vector<BatchStats> Stats() {
    std::lock_guard<std::mutex> lock(mu);
    return stats;
  }
  std::mutex mu;
  std::vector<BatchStats> stats;
};

struct Fixture {
  explicit Fixture(BatcherOptions options, absl::Duration per_batch = absl::ZeroDuration(),
                   Batcher::BatchObserver observer = nullptr, int64_t memory_tokens = 0)
      : encoder(4, per_batch),
        batcher(std::make_unique<Batcher>(
            [this, memory_tokens](
                const model_store::EncodeBatch& b) -> absl::StatusOr<model_store::EncodeResult> {
              size_t longest = 0;
              for (const auto& ids : b.sequences) longest = std::max(longest, ids.size());
              const int64_t padded = static_cast<int64_t>(longest * b.sequences.size());
              if (memory_tokens > 0 && padded > memory_tokens) {
                ++out_of_memory;
                return absl::ResourceExhaustedError(absl::StrCat(
                    "out of memory: encoder forward failed: ", padded, " padded tokens"));
              }
              return encoder.Encode(b);
            },
            model_store::PoolingMode::kCls, options, &pool, std::move(observer))) {}
  WorkerPool pool{2};
  testing::FakeEncoder encoder;
  std::atomic<int> out_of_memory{0};
  std::unique_ptr<Batcher> batcher;
};

TEST(Batcher, EveryTaskGetsItsOwnOutputOnAWorkerThread) {
  Fixture f({});
  Recorder r;
  std::vector<BatchTask> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back(r.Task(Ids(3 + i % 3, 100 + i)));
  f.batcher->Submit(std::move(tasks));
  r.all_done.get_future().wait();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(r.results[i].ok()) << r.results[i].status();
    EXPECT_EQ(r.results[i]->pooled[0], 3 + i % 3);
    EXPECT_EQ(r.results[i]->pooled[1], 0.5f);  // the task's temperature reached the model
    EXPECT_EQ(r.results[i]->pooled[2], 100 + i);
    EXPECT_NE(r.threads[i], f.encoder.thread()) << "completion ran on the batcher thread";
  }
}

TEST(Batcher, ShortSubmissionWaitsAtMostOneBatchBehindAHugeOne) {
  BatcherOptions options;
  options.max_batch_tokens = 128;
  Fixture f(options, absl::Milliseconds(3));
  Recorder r;
  std::vector<BatchTask> huge;
  for (int i = 0; i < 100; ++i) huge.push_back(r.Task(Ids(100, 1)));
  f.batcher->Submit(std::move(huge));
  absl::SleepFor(absl::Milliseconds(10));  // the huge document is being served
  std::vector<BatchTask> shorter;
  shorter.push_back(r.Task(Ids(5, 2)));
  f.batcher->Submit(std::move(shorter));
  // Read just after the submission, not before it: a loaded machine (the sanitized suite runs
  // two tests at once) may start a batch in between, which is no wait of the short request's.
  const size_t started_before = f.encoder.batches().size();
  r.all_done.get_future().wait();
  const auto batches = f.encoder.batches();
  size_t short_batch = batches.size();
  for (size_t b = 0; b < batches.size(); ++b) {
    for (const auto& seq : batches[b])
      if (seq[0] == 2) short_batch = b;
  }
  // The batch after the one in progress (indices count from 0), give or take one cut.
  EXPECT_LE(short_batch, started_before + 1) << "of " << batches.size() << " batches";
  EXPECT_GT(batches.size(), short_batch + 50) << "the huge document was served first";
}

TEST(Batcher, PaddingShareAndTokenBudgetBoundEveryBatch) {
  BatcherOptions options;
  options.max_batch_tokens = 256;
  options.max_padding_share = 0.2;
  StatsLog log;
  Fixture f(options, absl::ZeroDuration(), log.Observer());
  Recorder r;
  std::vector<BatchTask> tasks;
  for (int i = 0; i < 60; ++i) tasks.push_back(r.Task(Ids(i % 2 ? 10 : 50, 1)));
  f.batcher->Submit(std::move(tasks));
  r.all_done.get_future().wait();
  int64_t sequences = 0;
  for (const auto& s : log.Stats()) {
    EXPECT_LE(s.padded_tokens, 256);
    if (s.sequences > 1) {
      EXPECT_LE(s.padded_tokens - s.real_tokens, 0.2 * s.padded_tokens);
    }
    sequences += s.sequences;
  }
  EXPECT_EQ(sequences, 60);
}

TEST(Batcher, DeadTasksNeverReachTheModelAndCompleteWithTheirReason) {
  BatcherOptions options;
  options.max_batch_tokens = 16;  // one sequence per batch, so the later ones wait
  Fixture f(options, absl::Milliseconds(20));
  Recorder r;
  std::atomic<bool> cancelled{false};
  std::vector<BatchTask> tasks;
  for (int i = 0; i < 5; ++i) {
    tasks.push_back(r.Task(Ids(10, 500 + i), [&cancelled] {
      return cancelled.load() ? absl::CancelledError("client cancelled the call")
                              : absl::OkStatus();
    }));
  }
  std::vector<BatchTask> expired;
  expired.push_back(r.Task(Ids(10, 900), [] {
    return absl::DeadlineExceededError("deadline passed while the request was queued");
  }));
  f.batcher->Submit(std::move(tasks));
  f.batcher->Submit(std::move(expired));
  absl::SleepFor(absl::Milliseconds(5));
  cancelled.store(true);
  r.all_done.get_future().wait();
  EXPECT_EQ(r.results[5].status().code(), absl::StatusCode::kDeadlineExceeded);
  int dropped = 0;
  for (int i = 0; i < 5; ++i) {
    if (!r.results[i].ok()) {
      EXPECT_EQ(r.results[i].status().code(), absl::StatusCode::kCancelled);
      ++dropped;
    }
  }
  EXPECT_GE(dropped, 3);
  for (const auto& batch : f.encoder.batches()) {
    for (const auto& seq : batch) EXPECT_NE(seq[0], 900) << "an expired task reached the model";
  }
  EXPECT_EQ(f.batcher->queued_tasks(), 0);
}

TEST(Batcher, OutOfMemorySplitsTheBatchUntilItFitsAndLosesNothing) {
  BatcherOptions options;
  options.max_batch_tokens = 1024;
  options.max_padding_share = 1.0;
  StatsLog log;
  Fixture f(options, absl::Milliseconds(5), log.Observer(), /*memory_tokens=*/100);
  Recorder r;
  std::vector<BatchTask> tasks;
  for (int i = 0; i < 16; ++i) tasks.push_back(r.Task(Ids(20, 300 + i)));  // 320 padded
  tasks.push_back(r.Task(Ids(150, 999)));  // more than the memory holds, even alone
  f.batcher->Submit(std::move(tasks));
  r.all_done.get_future().wait();
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(r.results[i].ok()) << i << ": " << r.results[i].status();
    EXPECT_EQ(r.results[i]->pooled[0], 20);
    EXPECT_EQ(r.results[i]->pooled[2], 300 + i) << "a retried task got another's output";
  }
  EXPECT_EQ(r.results[16].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.results[16].status().message()),
              ::testing::HasSubstr("out of memory: encoder forward failed: 150 padded tokens"));
  int64_t served = 0, failed = 0;
  for (const auto& s : log.Stats()) {
    if (s.out_of_memory) {
      ++failed;
    } else {
      EXPECT_LE(s.padded_tokens, 100);
      served += s.sequences;
    }
  }
  EXPECT_EQ(served, 16) << "every sequence ran exactly once in a batch that fit";
  EXPECT_EQ(failed, f.out_of_memory.load());
  EXPECT_GE(failed, 3);  // the first cut, at least one half, and the long sequence alone
  EXPECT_EQ(f.batcher->queued_tasks(), 0);
}

TEST(Batcher, ShutdownCompletesQueuedTasksWithUnavailable) {
  BatcherOptions options;
  options.max_batch_tokens = 16;
  Fixture f(options, absl::Milliseconds(50));
  Recorder r;
  std::vector<BatchTask> tasks;
  for (int i = 0; i < 6; ++i) tasks.push_back(r.Task(Ids(10, 1)));
  f.batcher->Submit(std::move(tasks));
  absl::SleepFor(absl::Milliseconds(10));
  f.batcher.reset();  // mid-batch, with work queued
  r.all_done.get_future().wait();
  int unavailable = 0;
  for (const auto& result : r.results) {
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
      ++unavailable;
    }
  }
  EXPECT_GE(unavailable, 4);
}

// A fake model of four layers whose passes log each layer they finish, by the smallest first
// id of their sequences, and stop at the yield points they are given.
struct LayeredModel {
  static constexpr int kLayers = 4;
  absl::StatusOr<model_store::EncodeResult> Encode(const model_store::EncodeBatch& b) {
    int32_t who = b.sequences[0][0];
    for (const auto& ids : b.sequences) who = std::min(who, ids[0]);
    for (int layer = 0; layer < kLayers; ++layer) {
      {
        std::lock_guard<std::mutex> lock(mu);
        log.push_back(absl::StrCat(who, ".", layer));
        if (b.between_layers) yield_threads.insert(std::this_thread::get_id());
        else pass_threads.insert(std::this_thread::get_id());
      }
      if (who == kBlocker && layer == 0) {
        blocker_started.set_value();
        release_blocker.get_future().wait();
      }
      if (b.between_layers) b.between_layers();
    }
    for (const auto& ids : b.sequences) {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& other : b.sequences) same_batch.emplace_back(ids[0], other[0]);
    }
    return encoder.Encode(b);
  }
  static constexpr int32_t kBlocker = 1;
  testing::FakeEncoder encoder{4};
  std::mutex mu;
  std::vector<std::string> log;
  std::set<std::thread::id> yield_threads, pass_threads;
  std::vector<std::pair<int32_t, int32_t>> same_batch;
  std::promise<void> blocker_started, release_blocker;
};

// An interactive call that arrives during a background pass runs at the pass's next yield
// point, on its thread, before the pass's next layer; the background pass then finishes.
TEST(Batcher, ABackgroundPassYieldsToInteractiveWorkBetweenItsLayers) {
  WorkerPool pool(2);
  LayeredModel model;
  Batcher batcher([&](const model_store::EncodeBatch& b) { return model.Encode(b); },
                  model_store::PoolingMode::kCls, {}, &pool);
  Recorder r;
  std::vector<BatchTask> background;
  background.push_back(r.Task(Ids(6, LayeredModel::kBlocker)));
  batcher.Submit(std::move(background), Priority::kBackground);
  model.blocker_started.get_future().wait();  // in its first layer
  std::vector<BatchTask> interactive;
  interactive.push_back(r.Task(Ids(4, 2)));
  interactive.push_back(r.Task(Ids(4, 3)));
  batcher.Submit(std::move(interactive));
  model.release_blocker.set_value();
  r.all_done.get_future().wait();
  for (const auto& result : r.results) ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(model.log, ::testing::ElementsAre("1.0", "2.0", "2.1", "2.2", "2.3", "1.1", "1.2",
                                                "1.3"));
  EXPECT_EQ(model.yield_threads, model.pass_threads) << "the interactive pass ran elsewhere";
}

// Queued together, interactive tasks are all cut first, and no batch mixes the two kinds.
TEST(Batcher, BackgroundTasksWaitForQueuedInteractiveOnesAndNeverShareTheirBatch) {
  WorkerPool pool(2);
  LayeredModel model;
  Batcher batcher([&](const model_store::EncodeBatch& b) { return model.Encode(b); },
                  model_store::PoolingMode::kCls, {}, &pool);
  Recorder r;
  std::vector<BatchTask> blocker;
  blocker.push_back(r.Task(Ids(6, LayeredModel::kBlocker)));
  batcher.Submit(std::move(blocker));  // interactive: it does not yield
  model.blocker_started.get_future().wait();
  for (int i = 0; i < 3; ++i) {
    std::vector<BatchTask> background, interactive;
    background.push_back(r.Task(Ids(5, 10 + i)));
    interactive.push_back(r.Task(Ids(5, 20 + i)));
    batcher.Submit(std::move(background), Priority::kBackground);
    batcher.Submit(std::move(interactive));
  }
  model.release_blocker.set_value();
  r.all_done.get_future().wait();
  for (const auto& [a, b] : model.same_batch) EXPECT_EQ(a / 10, b / 10) << a << " with " << b;
  std::vector<int32_t> order;  // passes by their first layer
  for (const std::string& entry : model.log) {
    if (absl::EndsWith(entry, ".0")) order.push_back(std::stoi(entry));
  }
  ASSERT_GE(order.size(), 3u);
  EXPECT_EQ(order[0], LayeredModel::kBlocker);
  const auto first_background =
      std::find_if(order.begin(), order.end(), [](int32_t who) { return who / 10 == 1; });
  EXPECT_TRUE(std::all_of(first_background, order.end(), [](int32_t who) { return who / 10 == 1; }))
      << "an interactive pass came after a background one";
}

}  // namespace
}  // namespace embedding::server
