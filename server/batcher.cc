#include "server/batcher.h"

#include <algorithm>
#include <set>

namespace embedding::server {

Batcher::Batcher(EncodeFn encode, model_store::PoolingMode pooling, BatcherOptions options,
                 BatchObserver observer)
    : encode_(std::move(encode)),
      pooling_(pooling),
      options_(options),
      observer_(std::move(observer)),
      thread_([this] { Loop(); }) {}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (auto& job : jobs_) {
    for (auto& task : job.tasks) task.job->Fail(absl::UnavailableError("server shutting down"));
  }
}

void Batcher::Submit(std::vector<SequenceTask> tasks) {
  if (tasks.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_ += static_cast<int64_t>(tasks.size());
    for (const auto& t : tasks) queued_tokens_ += static_cast<int64_t>(t.ids.size());
    jobs_.push_back({std::deque<SequenceTask>(std::make_move_iterator(tasks.begin()),
                                              std::make_move_iterator(tasks.end())),
                     absl::Now()});
  }
  cv_.notify_one();
}

std::vector<SequenceTask> Batcher::CutBatch(std::vector<SequenceTask>* dropped) {
  const absl::Time now = absl::Now();
  // Drop dead work first, so it never reaches the model.
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (!it->tasks.front().job->DropReason(now).ok()) {
      queued_ -= static_cast<int64_t>(it->tasks.size());
      for (auto& t : it->tasks) {
        queued_tokens_ -= static_cast<int64_t>(t.ids.size());
        dropped->push_back(std::move(t));
      }
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  if (jobs_.empty()) return {};

  // Candidates in round-robin order: the head of every job, then the next of every job...
  // bounded so the scan stays cheap with huge documents queued.
  const size_t max_candidates = static_cast<size_t>(options_.max_batch_sequences) * 4;
  struct Candidate {
    std::list<JobQueue>::iterator job;
    size_t index;
    int64_t length;
  };
  std::vector<Candidate> candidates;
  for (size_t depth = 0; candidates.size() < max_candidates; ++depth) {
    bool any = false;
    for (auto it = jobs_.begin(); it != jobs_.end() && candidates.size() < max_candidates; ++it) {
      if (depth < it->tasks.size()) {
        candidates.push_back({it, depth, static_cast<int64_t>(it->tasks[depth].ids.size())});
        any = true;
      }
    }
    if (!any) break;
  }

  // The front job's next sequence anchors the batch, so jobs take turns (a short request
  // waits for at most one batch per job ahead of it, never for a whole huge document). Others
  // join by closeness in length while the padded size stays within the token budget and the
  // padding share within its bound: on a CPU, padding is pure waste.
  const int64_t anchor_length = candidates[0].length;
  std::vector<size_t> order(candidates.size() - 1);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i + 1;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::abs(candidates[a].length - anchor_length) <
           std::abs(candidates[b].length - anchor_length);
  });
  std::vector<size_t> chosen = {0};
  int64_t longest = anchor_length, real_tokens = anchor_length;
  for (size_t i : order) {
    if (static_cast<int64_t>(chosen.size()) >= options_.max_batch_sequences) break;
    const int64_t new_longest = std::max(longest, candidates[i].length);
    const int64_t padded = new_longest * static_cast<int64_t>(chosen.size() + 1);
    const int64_t real = real_tokens + candidates[i].length;
    if (padded > options_.max_batch_tokens) continue;
    if (padded - real > options_.max_padding_share * static_cast<double>(padded)) continue;
    chosen.push_back(i);
    longest = new_longest;
    real_tokens = real;
  }

  // Take the chosen tasks out (highest index first per job keeps indices valid).
  std::sort(chosen.begin(), chosen.end(),
            [&](size_t a, size_t b) { return candidates[a].index > candidates[b].index; });
  std::vector<SequenceTask> batch;
  std::set<JobQueue*> touched;
  for (size_t i : chosen) {
    auto& tasks = candidates[i].job->tasks;
    batch.push_back(std::move(tasks[candidates[i].index]));
    tasks.erase(tasks.begin() + static_cast<std::ptrdiff_t>(candidates[i].index));
    touched.insert(&*candidates[i].job);
  }
  queued_ -= static_cast<int64_t>(batch.size());
  // Served jobs move to the back in their order; emptied ones leave.
  std::list<JobQueue> served;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    auto next = std::next(it);
    if (it->tasks.empty()) {
      jobs_.erase(it);
    } else if (touched.count(&*it)) {
      served.splice(served.end(), jobs_, it);
    }
    it = next;
  }
  jobs_.splice(jobs_.end(), served);
  for (const auto& task : batch) queued_tokens_ -= static_cast<int64_t>(task.ids.size());
  return batch;
}

void Batcher::Loop() {
  while (true) {
    std::vector<SequenceTask> batch, dropped;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      // Give a partial batch a moment to fill, up to the queue delay of its oldest job.
      const absl::Time deadline = jobs_.front().enqueued + options_.max_queue_delay;
      while (!stopping_ && queued_ < options_.max_batch_sequences &&
             queued_tokens_ < options_.max_batch_tokens && absl::Now() < deadline) {
        cv_.wait_for(lock, absl::ToChronoNanoseconds(deadline - absl::Now()));
      }
      if (stopping_) return;
      batch = CutBatch(&dropped);
    }
    for (auto& task : dropped) task.job->Fail(task.job->DropReason(absl::Now()));
    dropped.clear();
    if (!batch.empty()) Run(std::move(batch));
  }
}

void Batcher::Run(std::vector<SequenceTask> batch) {
  model_store::EncodeBatch input;
  input.pooling = pooling_;
  input.normalize = false;  // merging needs raw chunk vectors; jobs normalise
  BatchStats stats;
  for (const auto& task : batch) {
    input.sequences.push_back(task.ids);
    input.temperatures.push_back(task.temperature);
    input.return_hidden_states = input.return_hidden_states || task.want_hidden_states;
    stats.real_tokens += static_cast<int64_t>(task.ids.size());
    stats.padded_tokens = std::max<int64_t>(stats.padded_tokens, task.ids.size());
  }
  stats.sequences = static_cast<int64_t>(batch.size());
  stats.padded_tokens *= stats.sequences;

  const absl::Time start = absl::Now();
  auto result = encode_(input);
  stats.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (observer_) observer_(stats);

  std::set<EmbedJob*> jobs;
  for (const auto& task : batch) {
    if (jobs.insert(task.job.get()).second) task.job->OnBatch(start, stats.seconds);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    SequenceTask& task = batch[i];
    if (!result.ok()) {
      task.job->Fail(result.status());
      continue;
    }
    std::vector<float> hidden;
    if (task.want_hidden_states) hidden = std::move(result->hidden_states[i]);
    task.job->OnSequenceDone(task.document, task.sequence, std::move(result->pooled[i]),
                             std::move(hidden), result->high_frequency_ratio[i]);
  }
}

}  // namespace embedding::server
