// The one entry point of the core, for every door: Embed, Tokenize and the served models,
// knowing no transport. A door parses its wire format into an EmbedCall, calls StartEmbed,
// and builds its own response and status from the answer. The Embedder owns the model lookup,
// admission, the job, the call counter and the drain flag.
//   StartEmbed: FindModel → ValidateEmbedCall → Admission::Admit → EmbedJob::Start
//   … EmbedJob completes → on_embedded (metrics) → done(EmbedAnswer)
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/text/tokenizer.h"
#include "server/core/admission.h"
#include "server/core/call_observer.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"
#include "server/core/embed_job.h"
#include "server/core/model_catalog.h"
#include "server/core/score_call.h"
#include "server/core/worker_pool.h"

namespace embedding::server {

struct TokenizeCall {
  std::string model;  // "" for the default model
  TextInputs inputs;
  bool add_special_tokens = true;
};

struct TokenizeAnswer {
  std::shared_ptr<const ServedModel> model;
  TextInputs inputs;                               // the call's texts, which the token spans index
  std::vector<model_store::TokenizedText> tokens;  // content tokens, one per input
  bool add_special_tokens = true;
};

class Embedder {
 public:
  using EmbedDone = std::function<void(absl::StatusOr<EmbedAnswer>)>;
  using TokenizeDone = std::function<void(absl::StatusOr<TokenizeAnswer>)>;
  using ScoreDone = std::function<void(absl::StatusOr<ScoreAnswer>)>;

  // `pool` (where jobs tokenise, plan and merge) must outlive the Embedder. Every observer
  // hears of every finished call and every successful Embed, in order.
  Embedder(const RequestLimits& limits, WorkerPool* pool, std::vector<CallObserver> observers = {});

  // Until called, every call answers UNAVAILABLE (models are loading). `models` must
  // outlive the Embedder.
  void SetReady(const ModelCatalog* models) { models_.store(models); }
  // From now on new calls answer UNAVAILABLE; accepted work continues.
  void StartDraining() { draining_.store(true); }

  // Validates and admits one Embed call and starts its job. `done` runs exactly once, on a
  // worker, with the answer or the job's error (CANCELLED, DEADLINE_EXCEEDED, INVALID_ARGUMENT
  // for a document that fails to tokenise or plan, RESOURCE_EXHAUSTED when the queue is full,
  // UNAVAILABLE at shutdown, INTERNAL for a backend failure). Returns the job, whose Cancel()
  // the door calls when its client goes away; or, before anything is allocated, UNAVAILABLE
  // (loading, draining), NOT_FOUND (model), INVALID_ARGUMENT naming the field, or
  // RESOURCE_EXHAUSTED (admission), in which case `done` never runs.
  // INVALID_ARGUMENT naming `model` for a reranker or classifier as well.
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartEmbed(EmbedCall call, EmbedDone done);

  // Scores each document against the query with a reranker, chunk by chunk past the window,
  // or with a late-interaction model by MaxSim (the query encoded once; a document's every
  // token, chunk by chunk), and ranks them. With no model named: the default model, or the
  // first reranker or late-interaction model served. As StartEmbed, and INVALID_ARGUMENT
  // naming `model` for a model that is neither, `query` for one that leaves no room for a
  // document, `strategy` for one that does not score.
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartRerank(RerankCall call, ScoreDone done);
  // Scores each input (or pair) with a reranker's or classifier's labels, in input order. As
  // StartRerank; an embedding model is refused naming `model`.
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartClassify(ClassifyCall call, ScoreDone done);

  // Tokenises `call.inputs` on a worker, holding a request slot meanwhile. `done` runs exactly
  // once with the tokens or INVALID_ARGUMENT naming the input (invalid UTF-8, more than
  // --max-tokens-per-document tokens in all). Errors returned as StartEmbed's, and then `done`
  // never runs.
  absl::Status StartTokenize(TokenizeCall call, TokenizeDone done);

  // The current version of every served model, in --model order; UNAVAILABLE while loading or
  // draining.
  absl::StatusOr<std::vector<std::shared_ptr<const ServedModel>>> CurrentModels() const;
  // "name", "name@version" or "" (the default); UNAVAILABLE or NOT_FOUND.
  absl::StatusOr<std::shared_ptr<const ServedModel>> FindModel(const std::string& name) const;
  // The default model's name; UNAVAILABLE while loading or draining.
  absl::StatusOr<std::string> DefaultModelName() const;

  // Every door counts its calls here (drain waits for them) and reports each finished one
  // (metrics, request log) exactly once.
  void CallStarted() { active_calls_.fetch_add(1); }
  void CallDone(const CallRecord& call);
  int64_t active_calls() const { return active_calls_.load(); }

  const RequestLimits& limits() const { return limits_; }
  const Admission& admission() const { return admission_; }

 private:
  // The catalog while serving; UNAVAILABLE while loading or draining.
  absl::StatusOr<const ModelCatalog*> ServingModels() const;
  // `name`; for "" the default model, or where it is of none of `kinds` the first served model
  // that is (so one server can embed with its default and rerank with a second model).
  // With `late_interaction`, a late-interaction model counts as one of them.
  absl::StatusOr<std::shared_ptr<const ServedModel>> FindScoringModel(
      const std::string& name, std::initializer_list<model_store::ModelKind> kinds,
      bool late_interaction) const;
  // Admits and starts a job over validated params (`leading_query`: EmbedJob::Request's);
  // `done` gets the job's result.
  using JobDone = std::function<void(absl::StatusOr<EmbedResult>)>;
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartJob(std::shared_ptr<const ServedModel> model,
                                                     const EmbedParams& params, EmbedInputs inputs,
                                                     std::string inputs_field, PairFirsts pairs,
                                                     bool leading_query, absl::Time deadline,
                                                     Priority priority, JobDone done);
  // Validates a score call's options and inputs on `model` and starts its job; `done` gets
  // the scored inputs in input order.
  absl::StatusOr<std::shared_ptr<EmbedJob>> StartScoring(
      const char* method, std::shared_ptr<const ServedModel> model, const ScoreOptions& options,
      TextInputs inputs, std::string inputs_field, PairFirsts pairs, absl::Time deadline,
      std::function<void(absl::StatusOr<ScoreAnswer>)> done);

  const RequestLimits limits_;
  WorkerPool* const pool_;
  const std::vector<CallObserver> observers_;
  Admission admission_;
  std::atomic<const ModelCatalog*> models_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> active_calls_{0};
};

}  // namespace embedding::server
