#include "client/embedctl/load_generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

const char* const kWords[] = {"the",  "of",   "and", "to",  "in",   "is",   "it",
                              "that", "was",  "for", "on",  "are",  "with", "as",
                              "his",  "they", "at",  "be",  "this", "from", "have",
                              "or",   "by",   "one", "had", "not",  "but",  "what"};

struct Call {
  grpc::ClientContext context;
  v1::EmbedRequest request;
  v1::EmbedResponse response;
  absl::Time start;
};

// Builds requests from the options; thread-safe.
class Workload {
 public:
  explicit Workload(const BenchOptions& o) : options_(o), rng_(o.seed) {}

  // A fresh call, with whether to inject a short deadline or a cancellation.
  std::shared_ptr<Call> Next(bool* short_deadline, bool* cancel) {
    std::lock_guard<std::mutex> lock(mu_);
    auto call = std::make_shared<Call>();
    v1::EmbedRequest& r = call->request;
    r.set_model(options_.model);
    r.set_task(options_.task);
    for (int i = 0; i < options_.documents_per_request; ++i) r.add_inputs(Document());
    if (Chance(options_.tempscale_share)) r.set_temperature(options_.tempscale_tau);
    r.set_strategy(options_.strategies[rng_() % options_.strategies.size()]);
    *short_deadline = Chance(options_.deadline_share);
    *cancel = !*short_deadline && Chance(options_.cancel_share);
    return call;
  }

  int CancelDelayMs() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(rng_() % 21);
  }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::string Document() {
    if (!options_.corpus.empty()) {
      const size_t index = options_.corpus_in_order ? next_document_++ : rng_();
      return options_.corpus[index % options_.corpus.size()];
    }
    std::lognormal_distribution<double> length(std::log(options_.median_words), options_.sigma);
    const int words = std::clamp(static_cast<int>(length(rng_)), 1, options_.max_words);
    std::string text;
    for (int i = 0; i < words; ++i) {
      if (i) text += ' ';
      text += kWords[rng_() % (sizeof(kWords) / sizeof(kWords[0]))];
    }
    return text;
  }

  const BenchOptions& options_;
  std::mutex mu_;
  std::mt19937_64 rng_;
  size_t next_document_ = 0;
};

// Cancels calls at their scheduled times from one thread.
class Canceller {
 public:
  Canceller() : thread_([this] { Loop(); }) {}
  ~Canceller() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Schedule(std::shared_ptr<Call> call, absl::Duration after) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      due_.emplace(absl::Now() + after, std::move(call));
    }
    cv_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (due_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const absl::Time when = due_.begin()->first;
      if (absl::Now() < when) {
        cv_.wait_for(lock, absl::ToChronoNanoseconds(when - absl::Now()));
        continue;
      }
      auto call = due_.begin()->second;
      due_.erase(due_.begin());
      call->context.TryCancel();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<absl::Time, std::shared_ptr<Call>> due_;
  bool stop_ = false;
  std::thread thread_;
};

// "INVALID_ARGUMENT" and so on: gRPC and absl share the google.rpc.Code numbering.
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// Why a response is wrong for its request, or "".
std::string CheckAnswer(const v1::EmbedRequest& request, const v1::EmbedResponse& response,
                        uint32_t dims) {
  if (response.documents_size() != request.inputs_size()) return "document count";
  for (const auto& doc : response.documents()) {
    if (static_cast<uint32_t>(doc.vector_size()) != dims) return "dimensions";
    double norm = 0;
    for (float x : doc.vector()) {
      if (!std::isfinite(x)) return "non-finite value";
      norm += double(x) * x;
    }
    if (std::abs(norm - 1.0) > 1e-3) return "norm";
  }
  return "";
}

class Recorder {
 public:
  void Record(const Call& call, const grpc::Status& status, uint32_t dims) {
    const double latency = absl::ToDoubleSeconds(absl::Now() - call.start);
    std::lock_guard<std::mutex> lock(mu_);
    ++report_.requests;
    if (!status.ok()) {
      ++report_.errors[CodeName(status.error_code())];
      return;
    }
    if (!CheckAnswer(call.request, call.response, dims).empty()) {
      ++report_.errors["WRONG_ANSWER"];
      return;
    }
    ++report_.ok;
    report_.documents += call.response.documents_size();
    report_.tokens += static_cast<int64_t>(call.response.usage().tokens());
    latencies_.push_back(latency);
  }

  int64_t finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return report_.requests;
  }

  BenchReport Finish(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    report_.seconds = seconds;
    std::sort(latencies_.begin(), latencies_.end());
    auto at = [&](double q) {
      if (latencies_.empty()) return 0.0;
      const size_t i = static_cast<size_t>(std::ceil(q * latencies_.size())) - 1;
      return latencies_[std::min(i, latencies_.size() - 1)];
    };
    report_.p50 = at(0.5);
    report_.p90 = at(0.9);
    report_.p99 = at(0.99);
    report_.max = latencies_.empty() ? 0 : latencies_.back();
    return report_;
  }

 private:
  std::mutex mu_;
  BenchReport report_;
  std::vector<double> latencies_;
};

}  // namespace

absl::StatusOr<BenchReport> RunBench(EmbeddingClient& client, const BenchOptions& options) {
  if (options.requests <= 0 && options.duration <= absl::ZeroDuration())
    return absl::InvalidArgumentError("bench: give --requests and/or --duration-s");
  if (options.concurrency < 1) return absl::InvalidArgumentError("concurrency: must be >= 1");
  if (options.strategies.empty()) return absl::InvalidArgumentError("strategies: none given");
  auto info = client.GetModelInfo(options.model);
  if (!info.ok()) return info.status();
  const uint32_t dims = info->dimensions();

  Workload workload(options);
  Canceller canceller;
  Recorder recorder;
  std::atomic<int64_t> issued{0};
  const absl::Time start = absl::Now();
  const absl::Time end =
      options.duration > absl::ZeroDuration() ? start + options.duration : absl::InfiniteFuture();
  auto claim = [&] {
    if (absl::Now() >= end) return false;
    return options.requests <= 0 || issued.fetch_add(1) < options.requests;
  };
  std::mutex done_mu;
  std::condition_variable done_cv;
  int64_t outstanding = 0;
  // Starts one call; `done` runs when it completes.
  auto issue = [&](std::function<void()> done) {
    bool short_deadline = false, cancel = false;
    auto call = workload.Next(&short_deadline, &cancel);
    call->start = absl::Now();
    call->context.set_deadline(absl::ToChronoTime(
        call->start + (short_deadline ? options.injected_deadline : options.timeout)));
    if (cancel) canceller.Schedule(call, absl::Milliseconds(workload.CancelDelayMs()));
    client.stub().async()->Embed(&call->context, &call->request, &call->response,
                                 [call, &recorder, dims, done](grpc::Status status) {
                                   recorder.Record(*call, status, dims);
                                   done();
                                 });
  };

  std::mutex progress_mu;
  std::condition_variable progress_cv;
  bool running = true;
  std::thread progress([&] {
    std::unique_lock<std::mutex> lock(progress_mu);
    while (!progress_cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return !running; })) {
      if (options.progress)
        options.progress(recorder.finished(), absl::ToDoubleSeconds(absl::Now() - start));
    }
  });

  if (options.rate > 0) {
    // Open loop: arrivals on a fixed schedule, whatever the server's pace.
    const absl::Duration interval = absl::Seconds(1.0 / options.rate);
    absl::Time next = start;
    while (claim()) {
      if (absl::Now() < next) absl::SleepFor(next - absl::Now());
      next += interval;
      {
        std::lock_guard<std::mutex> lock(done_mu);
        ++outstanding;
      }
      issue([&] {
        std::lock_guard<std::mutex> lock(done_mu);
        if (--outstanding == 0) done_cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(done_mu);
    done_cv.wait(lock, [&] { return outstanding == 0; });
  } else {
    std::vector<std::thread> workers;
    for (int w = 0; w < options.concurrency; ++w) {
      workers.emplace_back([&] {
        while (claim()) {
          std::promise<void> finished;
          issue([&finished] { finished.set_value(); });
          finished.get_future().wait();
        }
      });
    }
    for (auto& t : workers) t.join();
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  {
    std::lock_guard<std::mutex> lock(progress_mu);
    running = false;
  }
  progress_cv.notify_all();
  progress.join();
  return recorder.Finish(seconds);
}

std::string FormatBenchTable(const BenchReport& r) {
  std::string out = absl::StrFormat(
      "requests %lld (ok %lld) in %.2f s\n"
      "throughput   %10.2f req/s %10.2f docs/s %12.1f tokens/s\n"
      "latency (ok) p50 %.4f s  p90 %.4f s  p99 %.4f s  max %.4f s\n",
      static_cast<long long>(r.requests), static_cast<long long>(r.ok), r.seconds,
      r.requests_per_second(), r.documents_per_second(), r.tokens_per_second(), r.p50, r.p90, r.p99,
      r.max);
  for (const auto& [code, count] : r.errors)
    absl::StrAppendFormat(&out, "errors %-20s %lld\n", code, static_cast<long long>(count));
  return out;
}

std::string BenchReportJson(const BenchReport& r) {
  nlohmann::json json = {
      {"requests", r.requests},
      {"ok", r.ok},
      {"documents", r.documents},
      {"tokens", r.tokens},
      {"seconds", r.seconds},
      {"requests_per_second", r.requests_per_second()},
      {"documents_per_second", r.documents_per_second()},
      {"tokens_per_second", r.tokens_per_second()},
      {"latency_seconds", {{"p50", r.p50}, {"p90", r.p90}, {"p99", r.p99}, {"max", r.max}}},
      {"errors", r.errors}};
  return json.dump(2) + "\n";
}

}  // namespace embedding::client
