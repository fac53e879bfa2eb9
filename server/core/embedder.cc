#include "server/core/embedder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/max_sim.h"
#include "server/core/request_validation.h"
#include "server/core/scoring.h"

namespace embedding::server {

Embedder::Embedder(const RequestLimits& limits, WorkerPool* pool,
                   std::vector<CallObserver> observers)
    : limits_(limits),
      pool_(pool),
      observers_(std::move(observers)),
      admission_(limits.max_concurrent_requests, limits.max_queued_tokens) {}

void Embedder::CallDone(const CallRecord& call) {
  for (const CallObserver& observer : observers_) {
    if (observer.on_call_done) observer.on_call_done(call);
  }
  active_calls_.fetch_sub(1);
}

absl::StatusOr<const ModelCatalog*> Embedder::ServingModels() const {
  if (draining_.load())
    return absl::UnavailableError("server is draining; retry on another replica");
  const ModelCatalog* models = models_.load();
  if (models == nullptr)
    return absl::UnavailableError("server is loading its models; retry shortly");
  return models;
}

absl::StatusOr<std::vector<std::shared_ptr<const ServedModel>>> Embedder::CurrentModels() const {
  ASSIGN_OR_RETURN(const ModelCatalog* models, ServingModels());
  return models->Current();
}

absl::StatusOr<std::shared_ptr<const ServedModel>> Embedder::FindModel(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const ModelCatalog* models, ServingModels());
  return models->Find(name);
}

absl::StatusOr<std::string> Embedder::DefaultModelName() const {
  ASSIGN_OR_RETURN(const ModelCatalog* models, ServingModels());
  return models->default_name();
}

namespace {

// INVALID_ARGUMENT naming `model` when `served` is not of a kind `method` takes.
absl::Status RequireKind(const ServedModel& served, const char* method,
                         std::initializer_list<model_store::ModelKind> kinds,
                         const char* needs) {
  const model_store::ModelKind kind = served.model->kind();
  for (model_store::ModelKind wanted : kinds) {
    if (kind == wanted) return absl::OkStatus();
  }
  const std::string what =
      kind == model_store::ModelKind::kEmbedding ? "Embed"
      : kind == model_store::ModelKind::kReranker ? "Rerank and Classify"
                                                   : "Classify";
  return absl::InvalidArgumentError(absl::StrCat(
      "model: '", served.name, "' is ", kind == model_store::ModelKind::kEmbedding ? "an " : "a ",
      model_store::ModelKindName(kind), " model (", served.model->config().classifier.architecture,
      served.model->config().classifier.architecture.empty() ? "" : ", ",
      "it answers ", what, "); ", method, " needs ", needs));
}

}  // namespace

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartJob(
    std::shared_ptr<const ServedModel> model, const EmbedParams& params, EmbedInputs inputs,
    std::string inputs_field, PairFirsts pairs, bool leading_query, absl::Time deadline,
    Priority priority, JobDone done) {
  ASSIGN_OR_RETURN(AdmissionPermit permit, admission_.Admit());
  EmbedJob::Request job;
  job.model = model->model.get();
  job.batcher = model->batcher.get();
  job.keep_alive = model;
  job.params = params;
  job.inputs = std::move(inputs);
  job.inputs_field = std::move(inputs_field);
  job.pairs = std::move(pairs);
  job.leading_query = leading_query;
  job.deadline = deadline;
  job.priority = priority;
  job.max_tokens_per_document = limits_.max_tokens_per_document;
  job.max_response_bytes = limits_.max_response_bytes;
  job.permit = std::move(permit);
  return EmbedJob::Start(std::move(job), pool_, std::move(done));
}

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartEmbed(EmbedCall call, EmbedDone done) {
  // The version this call runs on until it is answered, even if a reload replaces it.
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, FindModel(call.options.model));
  RETURN_IF_ERROR(RequireKind(*model, "Embed", {model_store::ModelKind::kEmbedding},
                              "an embedding model"));
  ASSIGN_OR_RETURN(EmbedParams params, ValidateEmbedCall(call, *model->model, limits_));
  return StartJob(
      model, params, std::move(call.inputs), call.inputs_field, PairFirsts{},
      /*leading_query=*/false,
      call.deadline, call.priority,
      [this, model, params, done = std::move(done)](absl::StatusOr<EmbedResult> result) {
        if (!result.ok()) return done(result.status());
        for (const CallObserver& observer : observers_) {
          if (observer.on_embedded) observer.on_embedded(*model, params, *result);
        }
        done(EmbedAnswer{model, params, *std::move(result)});
      });
}

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartScoring(
    const char* method, std::shared_ptr<const ServedModel> model, const ScoreOptions& options,
    TextInputs inputs, std::string inputs_field, PairFirsts pairs, absl::Time deadline,
    std::function<void(absl::StatusOr<ScoreAnswer>)> done) {
  // Under the call's own name for the list (a rerank's documents) before the core's checks.
  RETURN_IF_ERROR(ValidateInputCount(inputs.size(), limits_, inputs_field));
  RETURN_IF_ERROR(ValidateTextBytes(inputs, 0, limits_, inputs_field));
  RETURN_IF_ERROR(ValidatePairFirsts(pairs.texts, pairs.field, inputs, limits_));
  // A late-interaction model encodes the query once, as a query, ahead of the documents, and
  // scores them by MaxSim; a cross-encoder reads each pair.
  const bool max_sim = model->model->late_interaction() != nullptr;
  if (max_sim) {
    if (!pairs.instruction.empty()) {
      return absl::InvalidArgumentError(
          "instruction: a late-interaction model takes none; leave it empty");
    }
    inputs.insert(inputs.begin(), std::move(pairs.texts.front()));
    pairs = PairFirsts{};
  }
  EmbedCall call;
  call.options.temperature = options.temperature;
  call.options.temperature_mode = options.temperature_mode;
  call.options.strategy = options.strategy.value_or(Strategy::kChunkMax);
  call.options.truncation_side = options.truncation_side;
  call.options.chunk_tokens = options.chunk_tokens;
  call.options.chunk_overlap_tokens = options.chunk_overlap_tokens;
  call.options.normalize = false;
  call.inputs = std::move(inputs);
  ASSIGN_OR_RETURN(EmbedParams params, ValidateScoreCall(call, options, *model->model, limits_));
  const model_store::ScoreFunction function = model->model->config().classifier.score;
  return StartJob(model, params, std::move(call.inputs), std::move(inputs_field), std::move(pairs),
                  max_sim, deadline, Priority::kInteractive,
                  [this, method, model, params, options, function, max_sim,
                   done = std::move(done)](absl::StatusOr<EmbedResult> result) {
                    if (!result.ok()) return done(result.status());
                    ScoreAnswer answer;
                    answer.model = model;
                    answer.method = method;
                    answer.params = params;
                    answer.raw_scores = options.raw_scores || max_sim;
                    answer.results = max_sim ? ScoreByMaxSim(&*result, options.return_chunks)
                                             : ScoreDocuments(&*result, function,
                                                              options.raw_scores,
                                                              options.return_chunks);
                    answer.usage = *std::move(result);
                    for (const CallObserver& observer : observers_) {
                      if (observer.on_scored) observer.on_scored(*model, answer);
                    }
                    done(std::move(answer));
                  });
}

absl::StatusOr<std::shared_ptr<const ServedModel>> Embedder::FindScoringModel(
    const std::string& name, std::initializer_list<model_store::ModelKind> kinds,
    bool late_interaction) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, FindModel(name));
  if (!name.empty()) return model;
  auto of_kind = [&kinds, late_interaction](const ServedModel& served) {
    return std::find(kinds.begin(), kinds.end(), served.model->kind()) != kinds.end() ||
           (late_interaction && served.model->late_interaction() != nullptr);
  };
  if (of_kind(*model)) return model;
  ASSIGN_OR_RETURN(auto models, CurrentModels());
  for (const auto& served : models) {
    if (of_kind(*served)) return served;
  }
  return model;  // refused by kind, naming it
}

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartRerank(RerankCall call, ScoreDone done) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model,
                   FindScoringModel(call.options.model, {model_store::ModelKind::kReranker},
                                    /*late_interaction=*/true));
  if (model->model->late_interaction() == nullptr) {
    RETURN_IF_ERROR(RequireKind(*model, "Rerank", {model_store::ModelKind::kReranker},
                                "a reranker (a *ForSequenceClassification checkpoint with one "
                                "label) or a late-interaction (ColBERT) model"));
  }
  const std::optional<uint32_t> top_n = call.top_n;
  if (top_n.has_value() && *top_n < 1)
    return absl::InvalidArgumentError("top_n: 0 is not allowed; allowed [1, 4294967295] (unset: all)");
  return StartScoring("Rerank", model, call.options, std::move(call.documents), "documents",
                      PairFirsts{{std::move(call.query)}, "query", call.options.instruction},
                      call.deadline,
                      [top_n, done = std::move(done)](absl::StatusOr<ScoreAnswer> answer) {
                        if (answer.ok()) RankResults(&answer->results, top_n);
                        done(std::move(answer));
                      });
}

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartClassify(ClassifyCall call,
                                                                  ScoreDone done) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model,
                   FindScoringModel(call.options.model, {model_store::ModelKind::kReranker,
                                                         model_store::ModelKind::kClassifier},
                                    /*late_interaction=*/false));
  RETURN_IF_ERROR(RequireKind(*model, "Classify",
                              {model_store::ModelKind::kReranker, model_store::ModelKind::kClassifier},
                              "a reranker or classifier (a *ForSequenceClassification checkpoint)"));
  if (!call.pair_firsts.empty() && call.pair_firsts.size() != call.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("text_pairs: ", call.pair_firsts.size(),
                                                   " first texts for ", call.inputs.size(),
                                                   " inputs; give one per input or none"));
  }
  if (call.pair_firsts.empty() && !model->model->score_prompt().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "text_pairs: model '", model->name,
        "' reads a pair inside its prompt; give a first text per input in text_pairs"));
  }
  if (!call.pair_firsts.empty() && !model->model->tokenizer().has_pair_template()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "text_pairs: model '", model->name, "' has no pair template in its tokenizer; send single texts"));
  }
  return StartScoring(
      "Classify", model, call.options, std::move(call.inputs), "inputs",
      PairFirsts{std::move(call.pair_firsts), "text_pairs", call.options.instruction},
      call.deadline, std::move(done));
}

absl::Status Embedder::StartTokenize(TokenizeCall call, TokenizeDone done) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, FindModel(call.model));
  RETURN_IF_ERROR(ValidateInputCount(call.inputs.size(), limits_));
  RETURN_IF_ERROR(ValidateTextBytes(call.inputs, 0, limits_));
  RETURN_IF_ERROR(ValidateTokenizeBytes(call.inputs, limits_));
  ASSIGN_OR_RETURN(AdmissionPermit permit, admission_.Admit());
  // The answer carries ~50 bytes per token on the wire: bounded like one document's tokens.
  const int64_t max_tokens = limits_.max_tokens_per_document;
  // Held until the answer is built: the slot comes back on every path.
  auto slot = std::make_shared<AdmissionPermit>(std::move(permit));
  auto shared_call = std::make_shared<TokenizeCall>(std::move(call));
  pool_->Schedule([model, slot, shared_call, max_tokens, done = std::move(done)] {
    TokenizeAnswer answer;
    answer.model = model;
    answer.add_special_tokens = shared_call->add_special_tokens;
    const model_store::Tokenizer& tokenizer = model->model->tokenizer();
    int64_t total = 0;
    for (size_t i = 0; i < shared_call->inputs.size(); ++i) {
      const std::string field = absl::StrCat("inputs[", i, "]");
      auto tokens = tokenizer.Tokenize(shared_call->inputs[i], field);
      if (tokens.ok() && (total += static_cast<int64_t>(tokens->ids.size())) > max_tokens) {
        tokens = absl::InvalidArgumentError(
            absl::StrCat(field, ": the inputs make more than ", max_tokens, " tokens; allowed [0, ",
                         max_tokens, "] per Tokenize call (--max-tokens-per-document)"));
      }
      if (!tokens.ok()) {
        slot->Reset();
        return done(tokens.status());
      }
      answer.tokens.push_back(*std::move(tokens));
    }
    answer.inputs = std::move(shared_call->inputs);
    slot->Reset();
    done(std::move(answer));
  });
  return absl::OkStatus();
}

}  // namespace embedding::server
