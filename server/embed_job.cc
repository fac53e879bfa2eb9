#include "server/embed_job.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "model_store/unicode_text.h"
#include "server/length_bucket.h"
#include "server/vector_math.h"

namespace embedding::server {

EmbedJob::EmbedJob(const model_store::Model& model, EmbedParams params,
                   std::vector<std::string> inputs, absl::Time deadline, JobLimits limits,
                   Admission* admission, DoneCallback done)
    : model_(model),
      params_(std::move(params)),
      deadline_(deadline),
      limits_(limits),
      admission_(admission),
      done_callback_(std::move(done)),
      created_(absl::Now()) {
  prompt_bytes_ = static_cast<uint32_t>(params_.prompt.size());
  documents_.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    documents_[i].text = params_.prompt.empty() ? std::move(inputs[i]) : params_.prompt + inputs[i];
  }
}

EmbedJob::~EmbedJob() {
  // A job dropped without completing (e.g. server shutdown) still answers its caller.
  if (!done_.load()) Complete(absl::UnavailableError("server shutting down"));
}

std::vector<SequenceTask> EmbedJob::Prepare() {
  const absl::Time start = absl::Now();
  const auto window = static_cast<uint32_t>(model_.max_content_tokens());
  const auto& tokenizer = model_.tokenizer();
  int64_t total_tokens = 0;
  int64_t sequences = 0;
  for (size_t i = 0; i < documents_.size(); ++i) {
    Document& doc = documents_[i];
    const std::string field = absl::StrCat("inputs[", i, "]");
    auto tokens = tokenizer.Tokenize(doc.text, field);
    if (!tokens.ok()) {
      Fail(tokens.status());
      return {};
    }
    doc.tokens = *std::move(tokens);
    const auto count = static_cast<uint32_t>(doc.tokens.ids.size());
    if (count > limits_.max_tokens_per_document) {
      Fail(absl::InvalidArgumentError(
          absl::StrCat(field, ": ", count, " tokens exceed the per-document bound; allowed [0, ",
                       limits_.max_tokens_per_document, "] (--max-tokens-per-document)")));
      return {};
    }
    auto plan = PlanChunks(count, window, params_, field);
    if (!plan.ok()) {
      Fail(plan.status());
      return {};
    }
    doc.plan = *std::move(plan);
    doc.pooled.resize(doc.plan.sequences.size());
    doc.hidden.resize(doc.plan.sequences.size());
    doc.hf_ratio.resize(doc.plan.sequences.size());
    for (const auto& range : doc.plan.sequences)
      total_tokens += range.size() + tokenizer.num_special_tokens();
    sequences += static_cast<int64_t>(doc.plan.sequences.size());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    tokenize_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
  }
  if (absl::Status status = admission_->ReserveTokens(total_tokens); !status.ok()) {
    Fail(status);
    return {};
  }
  reserved_tokens_.store(total_tokens);
  pending_sequences_.store(sequences);

  std::vector<SequenceTask> tasks;
  tasks.reserve(sequences);
  const bool late = params_.strategy == Strategy::kLateChunking;
  for (size_t d = 0; d < documents_.size(); ++d) {
    const Document& doc = documents_[d];
    for (size_t s = 0; s < doc.plan.sequences.size(); ++s) {
      const TokenRange& range = doc.plan.sequences[s];
      std::vector<int32_t> content(doc.tokens.ids.begin() + range.begin,
                                   doc.tokens.ids.begin() + range.end);
      tasks.push_back({shared_from_this(), static_cast<uint32_t>(d), static_cast<uint32_t>(s),
                       tokenizer.AddSpecialTokens(content), params_.temperature, late});
    }
  }
  return tasks;
}

absl::Status EmbedJob::DropReason(absl::Time now) const {
  if (done_.load()) return absl::AbortedError("job already completed");
  if (cancelled_.load()) return absl::CancelledError("client cancelled the call");
  if (now > deadline_) {
    return absl::DeadlineExceededError("deadline passed while the request was queued");
  }
  return absl::OkStatus();
}

void EmbedJob::OnBatch(absl::Time start, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (start < first_batch_) first_batch_ = start;
  inference_seconds_ += seconds;
}

void EmbedJob::OnSequenceDone(uint32_t document, uint32_t sequence, std::vector<float> pooled,
                              std::vector<float> hidden_states, float high_frequency_ratio) {
  if (done_.load()) return;
  Document& doc = documents_[document];
  doc.pooled[sequence] = std::move(pooled);
  doc.hidden[sequence] = std::move(hidden_states);
  doc.hf_ratio[sequence] = high_frequency_ratio;
  // Give the sequence's queue space back, unless completion already returned all of it.
  const int64_t tokens =
      doc.plan.sequences[sequence].size() + model_.tokenizer().num_special_tokens();
  int64_t current = reserved_tokens_.load();
  while (current >= tokens && !reserved_tokens_.compare_exchange_weak(current, current - tokens)) {
  }
  if (current >= tokens) admission_->ReleaseTokens(tokens);
  if (pending_sequences_.fetch_sub(1) != 1) return;

  EmbedResult result;
  for (const Document& d : documents_) {
    result.documents.push_back(MergeDocument(d));
    result.tokens += d.tokens.ids.size();
    result.sequences += d.plan.sequences.size();
    for (const auto& r : d.plan.sequences)
      result.sequence_tokens += r.size() + model_.tokenizer().num_special_tokens();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    result.tokenize_seconds = tokenize_seconds_;
    result.inference_seconds = inference_seconds_;
    result.queue_seconds = absl::ToDoubleSeconds(first_batch_ - created_) - tokenize_seconds_;
    if (result.queue_seconds < 0) result.queue_seconds = 0;
  }
  result.total_seconds = absl::ToDoubleSeconds(absl::Now() - created_);
  Complete(std::move(result));
}

void EmbedJob::Fail(const absl::Status& status) { Complete(status); }

void EmbedJob::Cancel() {
  cancelled_.store(true);
  Complete(absl::Now() > deadline_ ? absl::DeadlineExceededError("deadline passed")
                                   : absl::CancelledError("client cancelled the call"));
}

void EmbedJob::Complete(absl::StatusOr<EmbedResult> result) {
  if (done_.exchange(true)) return;
  admission_->ReleaseTokens(reserved_tokens_.exchange(0));
  admission_->ReleaseRequest();
  DoneCallback done = std::move(done_callback_);
  done(std::move(result));
}

std::vector<float> EmbedJob::LateChunkVector(const Document& doc, const TokenRange& chunk) const {
  const auto dim = static_cast<size_t>(model_.config().hidden_size);
  const size_t prefix = model_.tokenizer().config().prefix_ids.size();
  std::vector<double> sum(dim, 0.0);
  size_t rows = 0;
  auto add_row = [&](const std::vector<float>& hidden, size_t row) {
    for (size_t d = 0; d < dim; ++d) sum[d] += hidden[row * dim + d];
    ++rows;
  };
  if (chunk.size() == 0) {
    // An empty document: its one window holds only special tokens; pool all of them.
    const auto& hidden = doc.hidden[0];
    for (size_t row = 0; row < hidden.size() / dim; ++row) add_row(hidden, row);
  }
  for (uint32_t t = chunk.begin; t < chunk.end; ++t) {
    const uint32_t w = doc.plan.token_window[t];
    add_row(doc.hidden[w], prefix + (t - doc.plan.sequences[w].begin));
  }
  std::vector<float> out(dim);
  for (size_t d = 0; d < dim; ++d) out[d] = static_cast<float>(sum[d] / std::max<size_t>(rows, 1));
  return out;
}

DocumentResult EmbedJob::MergeDocument(const Document& doc) const {
  DocumentResult out;
  out.token_count = static_cast<uint32_t>(doc.tokens.ids.size());
  out.chunk_count = static_cast<uint32_t>(doc.plan.chunks.size());
  out.truncated = doc.plan.truncated;
  out.temperature = params_.temperature;
  out.length_bucket = LengthBucket(out.token_count);
  out.high_frequency_ratios = doc.hf_ratio;

  const bool late = params_.strategy == Strategy::kLateChunking;
  std::vector<std::vector<float>> chunk_vectors;
  std::vector<uint32_t> weights;
  for (size_t c = 0; c < doc.plan.chunks.size(); ++c) {
    chunk_vectors.push_back(late ? LateChunkVector(doc, doc.plan.chunks[c]) : doc.pooled[c]);
    if (params_.normalize) L2Normalize(&chunk_vectors.back());
    weights.push_back(doc.plan.chunks[c].size());
  }
  std::vector<float> merged = MergeChunkVectors(params_.strategy, chunk_vectors, weights);
  if (params_.normalize) L2Normalize(&merged);
  out.collapse_vector = merged;
  L2Normalize(&out.collapse_vector);
  out.vector = TruncateDimensions(merged, params_.dimensions, params_.normalize);

  if (params_.strategy == Strategy::kChunkAll || late) {
    const std::string_view input = std::string_view(doc.text).substr(prompt_bytes_);
    model_store::CodePointIndex chars(input);
    auto to_input = [&](uint32_t byte) { return byte > prompt_bytes_ ? byte - prompt_bytes_ : 0; };
    for (size_t c = 0; c < doc.plan.chunks.size(); ++c) {
      const TokenRange& range = doc.plan.chunks[c];
      ChunkResult chunk;
      chunk.vector = TruncateDimensions(chunk_vectors[c], params_.dimensions, params_.normalize);
      chunk.tokens = range;
      if (range.size() > 0) {
        chunk.bytes = {to_input(doc.tokens.spans[range.begin].begin),
                       to_input(doc.tokens.spans[range.end - 1].end)};
        chunk.chars = {chars.CharsBefore(chunk.bytes.begin), chars.CharsBefore(chunk.bytes.end)};
      }
      out.chunks.push_back(std::move(chunk));
    }
  }
  return out;
}

}  // namespace embedding::server
