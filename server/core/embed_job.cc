#include "server/core/embed_job.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/window_tokens.h"
#include "server/core/vector_encoding.h"

namespace embedding::server {

std::shared_ptr<EmbedJob> EmbedJob::Start(Request request, WorkerPool* pool, DoneCallback done) {
  std::shared_ptr<EmbedJob> job(new EmbedJob(std::move(request), std::move(done)));
  pool->Schedule([job] { job->Prepare(); });
  return job;
}

EmbedJob::EmbedJob(Request request, DoneCallback done)
    : request_(std::move(request)),
      created_(absl::Now()),
      sparse_dropped_ids_(SparseDroppedIds(*request_.model)),
      multi_vector_dim_(static_cast<size_t>(request_.model->encoder().multi_vector_dim())),
      done_callback_(std::move(done)) {
  auto* texts = std::get_if<TextInputs>(&request_.inputs);
  if (texts == nullptr) {  // token ids: no text, so every span is empty
    documents_.resize(std::get<TokenInputs>(request_.inputs).size());
    return;
  }
  const std::string& prompt = request_.params.prompt;
  documents_.resize(texts->size());
  for (size_t i = 0; i < documents_.size(); ++i) {
    std::string& input = (*texts)[i];
    documents_[i].text = prompt.empty() ? std::move(input) : prompt + input;
    documents_[i].prompt_bytes = static_cast<uint32_t>(prompt.size());
  }
  texts->clear();
}

EmbedJob::~EmbedJob() {
  // A job dropped without completing (it never reached a batcher) still answers its caller.
  Complete(absl::UnavailableError("server shutting down"));
}

absl::StatusOr<model_store::TokenizedText> EmbedJob::GivenTokens(size_t i, const std::string& field,
                                                                 int64_t vocab_size) {
  model_store::TokenizedText tokens;
  tokens.ids = std::move(std::get<TokenInputs>(request_.inputs)[i]);
  for (size_t t = 0; t < tokens.ids.size(); ++t) {
    if (tokens.ids[t] < 0 || tokens.ids[t] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", t, "]: token id ", tokens.ids[t],
                                                     " is outside the vocabulary; allowed [0, ",
                                                     vocab_size - 1, "]"));
    }
  }
  tokens.spans.assign(tokens.ids.size(), Span{0, 0});  // no text: every span is empty
  return tokens;
}

absl::StatusOr<model_store::TokenizedText> EmbedJob::DocumentTokens(size_t i,
                                                                    const std::string& field,
                                                                    uint32_t window, bool* cut) {
  const model_store::Model& model = *request_.model;
  *cut = false;
  if (std::holds_alternative<TokenInputs>(request_.inputs))
    return GivenTokens(i, field, model.config().vocab_size);
  // A scoring prompt's lead joins the document's first token (" word"), as the recipe
  // tokenises them; the spans stay the document's own.
  const std::string& lead = request_.pairs.texts.empty() ? "" : model.score_prompt().document_lead;
  const std::string led = lead.empty() ? std::string() : absl::StrCat(lead, documents_[i].text);
  const std::string_view text = lead.empty() ? documents_[i].text : led;
  model_store::TokenizedText tokens;
  if (request_.params.traits.plan == PlanRule::kTruncate) {
    ASSIGN_OR_RETURN(model_store::WindowTokens kept,
                     model_store::TokenizeWindow(model.tokenizer(), text, window,
                                                 request_.params.keep_end, field));
    tokens = std::move(kept.tokens);
    *cut = kept.cut;
  } else {
    ASSIGN_OR_RETURN(tokens, model.tokenizer().Tokenize(text, field));
  }
  const auto shift = static_cast<uint32_t>(lead.size());
  if (shift > 0) {
    for (model_store::TextSpan& span : tokens.spans) {
      span.begin = span.begin > shift ? span.begin - shift : 0;
      span.end = span.end > shift ? span.end - shift : 0;
    }
  }
  return tokens;
}

std::string EmbedJob::FirstField(size_t d) const {
  if (request_.pairs.texts.size() == 1) return request_.pairs.field;
  return absl::StrCat(request_.pairs.field, "[", d, "]");
}

absl::Status EmbedJob::TokenizePairFirsts() {
  const model_store::Tokenizer& tokenizer = request_.model->tokenizer();
  const model_store::ScorePrompt& prompt = request_.model->score_prompt();
  for (size_t i = 0; i < request_.pairs.texts.size(); ++i) {
    const std::string& text = request_.pairs.texts[i];
    ASSIGN_OR_RETURN(
        model_store::TokenizedText tokens,
        tokenizer.Tokenize(
            prompt.empty() ? text : prompt.FormatQuery(text, request_.pairs.instruction),
            FirstField(i)));
    first_ids_.push_back(std::move(tokens.ids));
  }
  return absl::OkStatus();
}

const std::vector<int32_t>& EmbedJob::FirstIds(size_t d) const {
  return first_ids_[first_ids_.size() == 1 ? 0 : d];
}

absl::StatusOr<EmbedParams> EmbedJob::PairParams(size_t d, uint32_t* window) const {
  const model_store::Model& model = *request_.model;
  const int64_t specials = model.tokenizer().num_pair_special_tokens();
  const auto first = static_cast<int64_t>(FirstIds(d).size());
  const int64_t room = model.max_input_length() - specials - first;
  if (room < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        FirstField(d), ": ", first, " tokens leave no room for the document in the model's window of ",
        model.max_input_length(), " tokens (", specials, " of them special); allowed [0, ",
        model.max_input_length() - specials - 1, "] tokens"));
  }
  EmbedParams params = request_.params;
  params.chunk_tokens = std::min<uint32_t>(params.chunk_tokens, static_cast<uint32_t>(room));
  if (params.overlap_tokens >= params.chunk_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk_overlap_tokens: ", params.overlap_tokens, " must be less than the ",
        params.chunk_tokens, " document tokens a chunk holds beside ", FirstField(d),
        "; allowed [0, ", params.chunk_tokens - 1, "]"));
  }
  *window = static_cast<uint32_t>(room);
  return params;
}

std::string EmbedJob::InputField(size_t d) const {
  if (!request_.leading_query) return absl::StrCat(request_.inputs_field, "[", d, "]");
  return d == 0 ? "query" : absl::StrCat(request_.inputs_field, "[", d - 1, "]");
}

model_store::InputRole EmbedJob::RoleOf(size_t d) const {
  return request_.leading_query && d == 0 ? model_store::InputRole::kQuery : request_.params.role;
}

EmbedParams EmbedJob::QueryParams(uint32_t* window) const {
  EmbedParams params = request_.params;
  *window = static_cast<uint32_t>(request_.model->late_interaction()->query_content_tokens());
  if (params.traits.plan != PlanRule::kReject) params.SetStrategy(Strategy::kTruncate);
  params.chunk_tokens = *window;
  params.overlap_tokens = 0;
  params.role = model_store::InputRole::kQuery;
  return params;
}

int64_t EmbedJob::SequenceOverhead(size_t d, size_t content) const {
  const model_store::Tokenizer& tokenizer = request_.model->tokenizer();
  if (const model_store::LateInteraction* late = request_.model->late_interaction()) {
    const int64_t specials = static_cast<int64_t>(late->prefix(RoleOf(d)).size() +
                                                  late->suffix().size());
    const bool expanded =
        RoleOf(d) == model_store::InputRole::kQuery && late->config().do_query_expansion;
    return expanded ? std::max<int64_t>(specials,
                                        late->config().query_length - static_cast<int64_t>(content))
                    : specials;
  }
  if (first_ids_.empty()) return tokenizer.num_special_tokens();
  return tokenizer.num_pair_special_tokens() + static_cast<int64_t>(FirstIds(d).size());
}

BatchTask EmbedJob::SequenceTask(size_t d, size_t s) const {
  const EncodedDocument& doc = documents_[d];
  const Span& range = doc.plan.sequences[s];
  const std::vector<int32_t> content(doc.tokens.ids.begin() + range.begin,
                                     doc.tokens.ids.begin() + range.end);
  BatchTask task;
  if (const model_store::LateInteraction* late = request_.model->late_interaction()) {
    model_store::RoleSequence sequence = late->Sequence(RoleOf(d), content);
    task.ids = std::move(sequence.ids);
    task.attended = sequence.attended;
  } else if (first_ids_.empty()) {
    task.ids = request_.model->tokenizer().AddSpecialTokens(content);
  } else {
    model_store::PairEncoding pair = request_.model->tokenizer().EncodePair(FirstIds(d), content);
    task.ids = std::move(pair.ids);
    task.token_types = std::move(pair.type_ids);
    // The rest needs a token of its own (an empty document with nothing after it has none).
    if (static_cast<size_t>(pair.second_begin) < task.ids.size()) {
      task.shared_prefix = pair.second_begin;
    }
  }
  task.adapter = request_.params.adapter;
  task.temperature = doc.sequence_tau[s];
  if (!doc.sequence_local_tau.empty()) task.local_temperature = doc.sequence_local_tau[s];
  task.want_hidden_states = request_.params.traits.needs_token_states || request_.params.token_states;
  task.token_outputs = {request_.params.sparse, request_.params.multi_vector};
  return task;
}

void EmbedJob::Prepare() {
  // Cancelled or expired while waiting for a worker: answer now, tokenise nothing.
  if (absl::Status alive = Liveness(); !alive.ok()) return Complete(alive);
  const absl::Time start = absl::Now();
  const model_store::Model& model = *request_.model;
  const bool late = request_.params.traits.needs_token_states;
  if (absl::Status firsts = TokenizePairFirsts(); !firsts.ok()) return Complete(firsts);
  int64_t total_tokens = 0;
  size_t sequences = 0;
  for (size_t i = 0; i < documents_.size(); ++i) {
    EncodedDocument& doc = documents_[i];
    const std::string field = InputField(i);
    uint32_t window = static_cast<uint32_t>(model.max_content_tokens());
    absl::StatusOr<EmbedParams> params = request_.params;
    if (!first_ids_.empty()) params = PairParams(i, &window);
    if (RoleOf(i) == model_store::InputRole::kQuery) params = QueryParams(&window);
    if (!params.ok()) return Complete(params.status());
    if (params->max_tokens > 0) window = std::min(window, params->max_tokens);
    bool cut = false;
    auto tokens = DocumentTokens(i, field, window, &cut);
    if (!tokens.ok()) return Complete(tokens.status());
    doc.tokens = *std::move(tokens);
    const auto count = static_cast<uint32_t>(doc.tokens.ids.size());
    if (count > request_.max_tokens_per_document) {
      return Complete(absl::InvalidArgumentError(
          absl::StrCat(field, ": ", count, " tokens exceed the per-document bound; allowed [0, ",
                       request_.max_tokens_per_document, "] (--max-tokens-per-document)")));
    }
    auto plan = PlanChunks(count, window, *params, field);
    if (!plan.ok()) return Complete(plan.status());
    doc.plan = *std::move(plan);
    doc.plan.truncated = doc.plan.truncated || cut;
    PrepareSlots(&doc, late, static_cast<size_t>(model.config().hidden_size));
    doc.sequence_tau = SequenceTemperatures(doc.plan, request_.params, model.tempscale());
    doc.sequence_local_tau = LocalSequenceTemperatures(doc.plan, request_.params, model.tempscale(),
                                                       model.config().local_attention_keys());
    for (const auto& range : doc.plan.sequences)
      total_tokens += range.size() + SequenceOverhead(i, range.size());
    sequences += doc.plan.sequences.size();
  }

  // Before any token output is allocated or any forward pass runs.
  if (absl::Status size = CheckResponseSize(); !size.ok()) return Complete(size);
  for (EncodedDocument& doc : documents_) {
    PrepareTokenOutputs(&doc.token_outputs, doc.plan, doc.tokens.ids.size(), late, request_.params,
                        multi_vector_dim_);
  }

  std::vector<BatchTask> tasks;
  tasks.reserve(sequences);
  auto self = shared_from_this();
  for (size_t d = 0; d < documents_.size(); ++d) {
    for (size_t s = 0; s < documents_[d].plan.sequences.size(); ++s) {
      BatchTask task = SequenceTask(d, s);
      task.liveness = [self] { return self->Liveness(); };
      task.done = [self, d, s](absl::StatusOr<SequenceOutput> output) {
        self->OnSequenceDone(d, s, std::move(output));
      };
      tasks.push_back(std::move(task));
    }
  }
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tokenize_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
    if (done_) return;  // cancelled while tokenising: reserve nothing
    auto reserved = request_.permit.ReserveTokens(total_tokens);
    if (reserved.ok()) {
      reserved_tokens_ = *std::move(reserved);
      pending_sequences_ = static_cast<int64_t>(sequences);
    } else {
      refused = reserved.status();
    }
  }
  if (!refused.ok()) return Complete(refused);
  request_.batcher->Submit(std::move(tasks), request_.priority);
}

absl::Status EmbedJob::CheckResponseSize() const {
  const EmbedParams& params = request_.params;
  const bool chunks = params.traits.returns_chunks;
  const int64_t dim = request_.model->encoder().embedding_dim();
  // Bytes per multi-vector on the wire: values, a span, and a scale under INT8.
  const int64_t per_vector =
      BytesPerVector(params.multi_vector_encoding, static_cast<int64_t>(multi_vector_dim_)) + 8;
  // A sparse entry: id, weight and its token's text (a few bytes).
  constexpr int64_t kPerSparseEntry = 16;
  // SPLADE's entries are vocabulary ids, not the text's tokens: up to the vocabulary a chunk.
  const bool splade = request_.model->encoder().has_splade_head();
  const int64_t vocabulary = request_.model->config().vocab_size;
  const model_store::LateInteraction* late = request_.model->late_interaction();
  int64_t bytes = 0;
  for (size_t d = 0; d < documents_.size(); ++d) {
    const EncodedDocument& doc = documents_[d];
    int64_t kept = 0;  // content tokens the model sees, counted once per chunk they are in
    for (const Span& chunk : doc.plan.chunks) kept += chunk.size();
    const int64_t ends = static_cast<int64_t>(doc.plan.chunks.size()) *
                         static_cast<int64_t>(request_.model->special_suffix().size());
    // A ColBERT model's also carry its first prefix (and a query its expansion).
    int64_t vectors = kept + ends;
    if (late != nullptr) {
      vectors += static_cast<int64_t>(late->prefix(RoleOf(d)).size());
      if (RoleOf(d) == model_store::InputRole::kQuery)
        vectors = std::max<int64_t>(vectors, late->config().query_length);
    }
    if (params.max_vectors > 0) vectors = std::min<int64_t>(vectors, params.max_vectors);
    const int64_t copies = chunks ? 2 : 1;  // the document's and its chunks'
    if (params.dense)
      bytes += dim * 4 * (chunks ? 1 + static_cast<int64_t>(doc.plan.chunks.size()) : 1);
    if (params.sparse && !splade) bytes += copies * kept * kPerSparseEntry;
    if (params.sparse && splade) {
      const int64_t entries = params.sparse_top_k > 0
                                  ? std::min<int64_t>(params.sparse_top_k, vocabulary)
                                  : vocabulary;
      const int64_t lists = chunks ? 1 + static_cast<int64_t>(doc.plan.chunks.size()) : 1;
      bytes += lists * entries * kPerSparseEntry;
    }
    // A late-interaction rerank scores its vectors and returns none.
    if (params.multi_vector && !request_.leading_query) bytes += copies * vectors * per_vector;
    if (params.token_states)
      bytes += (kept + request_.model->tokenizer().num_special_tokens()) * dim * 4;
  }
  if (bytes <= request_.max_response_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("outputs: the response would carry about ", bytes,
                   " bytes, above the bound; allowed [0, ", request_.max_response_bytes,
                   "] (--max-response-bytes); ask for max_vectors, a FLOAT16 or INT8 "
                   "multi_vector_encoding, or fewer inputs"));
}

absl::Status EmbedJob::Liveness() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return absl::CancelledError("client cancelled the call");
  if (done_) return absl::AbortedError("request already completed");
  if (absl::Now() > request_.deadline)
    return absl::DeadlineExceededError("deadline passed while the request was queued");
  return absl::OkStatus();
}

void EmbedJob::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  Complete(absl::Now() > request_.deadline ? absl::DeadlineExceededError("deadline passed")
                                           : absl::CancelledError("client cancelled the call"));
}

void EmbedJob::OnSequenceDone(size_t document, size_t sequence,
                              absl::StatusOr<SequenceOutput> output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    EncodedDocument& doc = documents_[document];
    const size_t content = doc.plan.sequences[sequence].size();
    reserved_tokens_.Return(content + SequenceOverhead(document, content));
    if (done_) return;
    if (output.ok()) {
      if (request_.params.traits.needs_token_states) {
        // Fold the window's states into its chunks now; keep none of them.
        AddLateChunkWindow(&doc, sequence, output->hidden_states,
                           static_cast<size_t>(request_.model->config().hidden_size),
                           request_.model->special_prefix().size());
      } else {
        doc.pooled[sequence] = std::move(output->pooled);
        if (request_.params.token_states) doc.token_states = std::move(output->hidden_states);
      }
      doc.hf_ratio[sequence] = output->high_frequency_ratio;
      if (request_.params.sparse || request_.params.multi_vector) {
        const model_store::LateInteraction* late = request_.model->late_interaction();
        FoldTokenOutputs(&doc.token_outputs, doc.plan, doc.tokens.ids, sequence,
                         request_.params.traits.needs_token_states,
                         late ? late->prefix(RoleOf(document)).size()
                              : request_.model->special_prefix().size(),
                         late != nullptr, sparse_dropped_ids_, output->token_weights,
                         output->token_vectors, multi_vector_dim_);
        FoldVocabularySparse(&doc.token_outputs, sequence, output->vocabulary_sparse);
      }
      if (batches_seen_.insert(output->batch_id).second) {
        inference_seconds_ += output->batch_seconds;
        first_batch_ = std::min(first_batch_, output->batch_start);
      }
      if (--pending_sequences_ > 0) return;
    }
  }
  // One sequence failed, or the last one arrived: merge outside the lock.
  if (!output.ok()) return Complete(output.status());
  Complete(Merge());
}

EmbedResult EmbedJob::Merge() const {
  const model_store::Model& model = *request_.model;
  const auto dim = static_cast<size_t>(model.config().hidden_size);
  EmbedResult result;
  for (size_t d = 0; d < documents_.size(); ++d) {
    const EncodedDocument& doc = documents_[d];
    result.documents.push_back(
        MergeDocument(doc, request_.params, dim,
                      [&model](std::vector<float>* v) { model.encoder().ProjectPooled(v); }));
    result.documents.back().token_states = doc.token_states;
    if (request_.params.sparse || request_.params.multi_vector) {
      const LateRows late_rows{model.late_interaction(),
                               RoleOf(d) == model_store::InputRole::kQuery};
      MergeTokenOutputs(doc.token_outputs, doc.plan, doc.tokens.ids,
                        request_.params.traits.needs_token_states, sparse_dropped_ids_, late_rows,
                        request_.params, multi_vector_dim_, &result.documents.back());
    }
    result.tokens += doc.tokens.ids.size();
    result.sequences += doc.plan.sequences.size();
    for (const auto& range : doc.plan.sequences)
      result.sequence_tokens += range.size() + SequenceOverhead(d, range.size());
  }
  std::lock_guard<std::mutex> lock(mu_);
  result.tokenize_seconds = tokenize_seconds_;
  result.inference_seconds = inference_seconds_;
  result.queue_seconds =
      std::max(0.0, absl::ToDoubleSeconds(first_batch_ - created_) - tokenize_seconds_);
  result.total_seconds = absl::ToDoubleSeconds(absl::Now() - created_);
  return result;
}

void EmbedJob::Complete(absl::StatusOr<EmbedResult> result) {
  DoneCallback done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    request_.permit.Reset();
    done = std::move(done_callback_);
  }
  done(std::move(result));
}

}  // namespace embedding::server
