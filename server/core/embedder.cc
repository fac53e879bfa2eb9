#include "server/core/embedder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/request_validation.h"

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

absl::StatusOr<std::shared_ptr<EmbedJob>> Embedder::StartEmbed(EmbedCall call, EmbedDone done) {
  // The version this call runs on until it is answered, even if a reload replaces it.
  ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, FindModel(call.options.model));
  ASSIGN_OR_RETURN(EmbedParams params, ValidateEmbedCall(call, *model->model, limits_));
  ASSIGN_OR_RETURN(AdmissionPermit permit, admission_.Admit());

  EmbedJob::Request job;
  job.model = model->model.get();
  job.batcher = model->batcher.get();
  job.keep_alive = model;
  job.params = params;
  job.inputs = std::move(call.inputs);
  job.deadline = call.deadline;
  job.max_tokens_per_document = limits_.max_tokens_per_document;
  job.max_response_bytes = limits_.max_response_bytes;
  job.permit = std::move(permit);
  return EmbedJob::Start(
      std::move(job), pool_,
      [this, model, params, done = std::move(done)](absl::StatusOr<EmbedResult> result) {
        if (!result.ok()) return done(result.status());
        for (const CallObserver& observer : observers_) {
          if (observer.on_embedded) observer.on_embedded(*model, params, *result);
        }
        done(EmbedAnswer{model, params, *std::move(result)});
      });
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
