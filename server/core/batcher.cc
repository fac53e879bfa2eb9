#include "server/core/batcher.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <set>

namespace embedding::server {
namespace {

int64_t Length(const BatchTask& task) { return static_cast<int64_t>(task.ids.size()); }

// Which candidates join the batch, given their lengths (the first is the anchor). The front
// submission's next task anchors the batch, so submissions take turns (a short request waits
// for at most one batch per submission ahead of it, never for a whole huge document). Others
// join by closeness in length while the padded size (sequences x longest) stays within the
// token budget and its padding share within its bound. The encoder packs sequences, so no
// padding is computed; the bounds keep a batch's lengths alike, so a short sequence does not
// wait out a long one's attention in the same pass. `real_tokens` gets the chosen tasks' tokens.
std::vector<size_t> ChooseByLength(const std::vector<int64_t>& lengths,
                                   const BatcherOptions& options, int64_t* real_tokens) {
  const int64_t anchor_length = lengths[0];
  std::vector<size_t> order(lengths.size() - 1);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i + 1;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::abs(lengths[a] - anchor_length) < std::abs(lengths[b] - anchor_length);
  });
  std::vector<size_t> chosen = {0};
  int64_t longest = anchor_length;
  *real_tokens = anchor_length;
  for (size_t i : order) {
    if (static_cast<int64_t>(chosen.size()) >= options.max_batch_sequences) break;
    const int64_t new_longest = std::max(longest, lengths[i]);
    const int64_t padded = new_longest * static_cast<int64_t>(chosen.size() + 1);
    const int64_t real = *real_tokens + lengths[i];
    if (padded > options.max_batch_tokens) continue;
    if (padded - real > options.max_padding_share * static_cast<double>(padded)) continue;
    chosen.push_back(i);
    longest = new_longest;
    *real_tokens = real;
  }
  return chosen;
}

}  // namespace

Batcher::Batcher(EncodeFn encode, model_store::PoolingMode pooling, BatcherOptions options,
                 WorkerPool* completions, BatchObserver observer,
                 std::function<void()> yield_to_others)
    : encode_(std::move(encode)),
      pooling_(pooling),
      options_(options),
      completions_(completions),
      observer_(std::move(observer)),
      yield_to_others_(std::move(yield_to_others)),
      thread_([this] { Loop(); }) {}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (auto& submission : queue_) {
    for (auto& task : submission.tasks) task.done(absl::UnavailableError("server shutting down"));
  }
}

void Batcher::Submit(std::vector<BatchTask> tasks, Priority priority) {
  if (tasks.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queued_ += static_cast<int64_t>(tasks.size());
      for (const auto& t : tasks) queued_tokens_ += Length(t);
      queue_.push_back({std::deque<BatchTask>(std::make_move_iterator(tasks.begin()),
                                              std::make_move_iterator(tasks.end())),
                        absl::Now(), priority});
      tasks.clear();
    }
  }
  for (auto& task : tasks) task.done(absl::UnavailableError("server shutting down"));
  cv_.notify_one();
}

int64_t Batcher::queued_tasks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void Batcher::DropDeadLocked(Dropped* dropped) {
  // From the front of every submission: a submission's tasks share their caller, so they die
  // together.
  for (auto it = queue_.begin(); it != queue_.end();) {
    while (!it->tasks.empty()) {
      absl::Status alive = it->tasks.front().liveness();
      if (alive.ok()) break;
      --queued_;
      queued_tokens_ -= Length(it->tasks.front());
      dropped->emplace_back(std::move(it->tasks.front()), std::move(alive));
      it->tasks.pop_front();
    }
    it = it->tasks.empty() ? queue_.erase(it) : std::next(it);
  }
}

bool Batcher::InteractiveQueuedLocked() const {
  return std::any_of(queue_.begin(), queue_.end(), [](const Submission& s) {
    return s.priority == Priority::kInteractive;
  });
}

std::vector<BatchTask> Batcher::CutBatchLocked(Priority priority, Dropped* dropped) {
  DropDeadLocked(dropped);  // dead work never reaches the model

  // Candidates in round-robin order: the head of every submission, then the next of each...
  // bounded so the scan stays cheap with huge documents queued.
  const size_t max_candidates = static_cast<size_t>(options_.max_batch_sequences) * 4;
  struct Candidate {
    std::list<Submission>::iterator submission;
    size_t index;
    int64_t length;
  };
  std::vector<Candidate> candidates;
  for (size_t depth = 0; candidates.size() < max_candidates; ++depth) {
    bool any = false;
    for (auto it = queue_.begin(); it != queue_.end() && candidates.size() < max_candidates; ++it) {
      if (it->priority == priority && depth < it->tasks.size()) {
        candidates.push_back({it, depth, Length(it->tasks[depth])});
        any = true;
      }
    }
    if (!any) break;
  }
  if (candidates.empty()) return {};

  std::vector<int64_t> lengths;
  for (const Candidate& c : candidates) lengths.push_back(c.length);
  int64_t real_tokens = 0;
  std::vector<size_t> chosen = ChooseByLength(lengths, options_, &real_tokens);

  // Take the chosen tasks out (highest index first per submission keeps indices valid).
  std::sort(chosen.begin(), chosen.end(),
            [&](size_t a, size_t b) { return candidates[a].index > candidates[b].index; });
  std::vector<BatchTask> batch;
  std::set<Submission*> served;
  for (size_t i : chosen) {
    auto& tasks = candidates[i].submission->tasks;
    batch.push_back(std::move(tasks[candidates[i].index]));
    tasks.erase(tasks.begin() + static_cast<std::ptrdiff_t>(candidates[i].index));
    served.insert(&*candidates[i].submission);
  }
  queued_ -= static_cast<int64_t>(batch.size());
  queued_tokens_ -= real_tokens;
  // Served submissions move to the back in their order; emptied ones leave.
  std::list<Submission> moved;
  for (auto it = queue_.begin(); it != queue_.end();) {
    auto next = std::next(it);
    if (it->tasks.empty()) {
      queue_.erase(it);
    } else if (served.count(&*it)) {
      moved.splice(moved.end(), queue_, it);
    }
    it = next;
  }
  queue_.splice(queue_.end(), moved);
  return batch;
}

void Batcher::Loop() {
  while (true) {
    std::vector<BatchTask> batch;
    Priority priority = Priority::kInteractive;
    auto dropped = std::make_shared<Dropped>();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      // Give a partial batch a moment to fill, up to the queue delay of its oldest submission.
      const absl::Time deadline = queue_.front().enqueued + options_.max_queue_delay;
      while (!stopping_ && queued_ < options_.max_batch_sequences &&
             queued_tokens_ < options_.max_batch_tokens && absl::Now() < deadline) {
        cv_.wait_for(lock, absl::ToChronoNanoseconds(deadline - absl::Now()));
      }
      if (stopping_) return;
      if (!InteractiveQueuedLocked()) priority = Priority::kBackground;
      batch = CutBatchLocked(priority, dropped.get());
    }
    CompleteDropped(std::move(dropped));
    if (!batch.empty()) Run(std::move(batch), priority);
  }
}

void Batcher::CompleteDropped(std::shared_ptr<Dropped> dropped) {
  // Tasks leave this thread with their completions and never come back: a task can hold the
  // last reference to the model version that owns this batcher, and ~Batcher on its own
  // thread would join itself.
  if (dropped->empty()) return;
  completions_->Schedule([dropped = std::move(dropped)] {
    for (auto& [task, reason] : *dropped) task.done(reason);
  });
}

void Batcher::YieldToInteractive() {
  if (yield_to_others_) yield_to_others_();
  while (true) {
    std::vector<BatchTask> batch;
    auto dropped = std::make_shared<Dropped>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || !InteractiveQueuedLocked()) return;
      batch = CutBatchLocked(Priority::kInteractive, dropped.get());
    }
    CompleteDropped(std::move(dropped));
    if (!batch.empty()) Run(std::move(batch), Priority::kInteractive);
  }
}

void Batcher::Run(std::vector<BatchTask> batch, Priority priority) {
  model_store::EncodeBatch input;
  input.pooling = pooling_;
  input.normalize = false;  // callers merge raw chunk vectors, then normalise
  if (priority == Priority::kBackground) input.between_layers = [this] { YieldToInteractive(); };
  BatchStats stats;
  for (const auto& task : batch) {
    input.sequences.push_back(task.ids);
    input.token_types.push_back(task.token_types);
    input.prefix_lengths.push_back(task.shared_prefix);
    input.adapters.push_back(task.adapter);
    input.attended_lengths.push_back(task.attended);
    input.temperatures.push_back(task.temperature);
    input.local_temperatures.push_back(task.local_temperature.value_or(task.temperature));
    input.return_hidden_states = input.return_hidden_states || task.want_hidden_states;
    input.token_outputs.push_back(task.token_outputs);
    stats.real_tokens += Length(task);
    stats.padded_tokens = std::max(stats.padded_tokens, Length(task));
  }
  stats.sequences = static_cast<int64_t>(batch.size());
  stats.padded_tokens *= stats.sequences;

  const absl::Time start = absl::Now();
  auto result = std::make_shared<absl::StatusOr<model_store::EncodeResult>>(encode_(input));
  stats.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  stats.out_of_memory = absl::IsResourceExhausted(result->status());
  if (observer_) observer_(stats);
  // Out of memory is a fact of the batch's size, not of its sequences: its halves are tried
  // in turn, until a sequence that fails alone gets RESOURCE_EXHAUSTED with the reason.
  if (stats.out_of_memory && batch.size() > 1) {
    const auto middle = batch.begin() + static_cast<std::ptrdiff_t>(batch.size() / 2);
    std::vector<BatchTask> second(std::make_move_iterator(middle),
                                  std::make_move_iterator(batch.end()));
    batch.erase(middle, batch.end());
    Run(std::move(batch), priority);
    Run(std::move(second), priority);
    return;
  }

  // Moved, not copied, into the completion: see Loop.
  completions_->Schedule([tasks = std::make_shared<std::vector<BatchTask>>(std::move(batch)),
                          result, start, seconds = stats.seconds, id = ++batches_] {
    for (size_t i = 0; i < tasks->size(); ++i) {
      BatchTask& task = (*tasks)[i];
      if (!result->ok()) {
        task.done(result->status());
        continue;
      }
      SequenceOutput out;
      out.pooled = std::move((*result)->pooled[i]);
      if (task.want_hidden_states) out.hidden_states = std::move((*result)->hidden_states[i]);
      out.high_frequency_ratio = (*result)->high_frequency_ratio[i];
      if (!(*result)->token_weights.empty()) {
        out.token_weights = std::move((*result)->token_weights[i]);
        out.token_vectors = std::move((*result)->token_vectors[i]);
      }
      if (!(*result)->vocabulary_sparse.empty()) {
        out.vocabulary_sparse = std::move((*result)->vocabulary_sparse[i]);
      }
      out.batch_id = id;
      out.batch_start = start;
      out.batch_seconds = seconds;
      task.done(std::move(out));
    }
  });
}

}  // namespace embedding::server
