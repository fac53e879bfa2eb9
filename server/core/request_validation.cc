#include "server/core/request_validation.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "server/core/input_type_match.h"

namespace embedding::server {
namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// Past this every document is one cluster or a few: pooling's point is 2 or 3 (Answer.AI).
constexpr uint32_t kMaxPoolFactor = 1024;

}  // namespace

absl::Status ValidateInputCount(size_t count, const RequestLimits& limits,
                                absl::string_view field) {
  if (count == 0) {
    return Invalid(absl::StrCat(
        field, ": at least one input is required (an empty string is a valid input)"));
  }
  if (count > limits.max_inputs_per_request) {
    return Invalid(absl::StrCat(field, ": ", count, " inputs exceed the bound; allowed [1, ",
                                limits.max_inputs_per_request, "] (--max-inputs-per-request)"));
  }
  return absl::OkStatus();
}

int64_t MaxInputBytes(const RequestLimits& limits) {
  return kMaxBytesPerToken * static_cast<int64_t>(limits.max_tokens_per_document);
}

absl::Status ValidateTextBytes(const TextInputs& inputs, size_t prompt_bytes,
                               const RequestLimits& limits, absl::string_view field) {
  int64_t bytes = 0;
  for (const auto& input : inputs) bytes += static_cast<int64_t>(input.size() + prompt_bytes);
  if (bytes > limits.max_request_bytes) {
    return Invalid(absl::StrCat(
        field, prompt_bytes > 0 ? " and prompt: " : ": ", bytes, " bytes of text",
        prompt_bytes > 0 ? " (the prompt counts once per input)" : "",
        " exceed the bound; allowed [0, ", limits.max_request_bytes, "] (--max-request-bytes)"));
  }
  const int64_t max_input = MaxInputBytes(limits);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto input = static_cast<int64_t>(inputs[i].size() + prompt_bytes);
    if (input <= max_input) continue;
    return Invalid(absl::StrCat(
        field, "[", i, "]: ", input, " bytes of text", prompt_bytes > 0 ? " with the prompt" : "",
        " exceed the bound; allowed [0, ", max_input, "] (", kMaxBytesPerToken,
        " bytes for each token --max-tokens-per-document allows)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateTokenizeBytes(const TextInputs& inputs, const RequestLimits& limits) {
  int64_t bytes = 0;
  for (const auto& input : inputs) bytes += static_cast<int64_t>(input.size());
  const int64_t max_bytes = MaxInputBytes(limits);
  if (bytes <= max_bytes) return absl::OkStatus();
  return Invalid(absl::StrCat("inputs: ", bytes,
                              " bytes of text exceed the bound for one Tokenize call; allowed [0, ",
                              max_bytes, "] (", kMaxBytesPerToken,
                              " bytes for each token --max-tokens-per-document allows)"));
}

// Every token id costs 4 bytes of --max-request-bytes, as its text would cost its bytes.
absl::Status ValidateTokenCount(const TokenInputs& inputs, const RequestLimits& limits) {
  const int64_t max_ids = limits.max_request_bytes / 4;
  int64_t ids = 0;
  for (const auto& input : inputs) ids += static_cast<int64_t>(input.size());
  if (ids <= max_ids) return absl::OkStatus();
  return Invalid(absl::StrCat("inputs: ", ids, " token ids exceed the bound; allowed [0, ", max_ids,
                              "] (--max-request-bytes / 4)"));
}

// What the inputs cost before anything is copied: their count, and their bytes with
// `prompt_bytes` prepended to each text (token ids take no prompt).
absl::Status ValidateInputs(const EmbedInputs& inputs, size_t prompt_bytes,
                            const RequestLimits& limits, absl::string_view field) {
  if (const auto* texts = std::get_if<TextInputs>(&inputs)) {
    RETURN_IF_ERROR(ValidateInputCount(texts->size(), limits, field));
    return ValidateTextBytes(*texts, prompt_bytes, limits, field);
  }
  const auto& ids = std::get<TokenInputs>(inputs);
  RETURN_IF_ERROR(ValidateInputCount(ids.size(), limits));
  return ValidateTokenCount(ids, limits);
}

// FIXED: the request's tau within the server's range, or the default. AUTO: no tau of its own.
absl::Status ValidateTemperature(const EmbedRequestOptions& request, const RequestLimits& limits,
                                 EmbedParams* params) {
  params->auto_temperature = request.temperature_mode == TemperatureMode::kAuto;
  params->temperature = limits.default_temperature;
  if (!request.temperature.has_value()) return absl::OkStatus();
  if (params->auto_temperature) {
    return Invalid(
        "temperature: must be unset when temperature_mode is AUTO (the model's schedule "
        "chooses tau per sequence)");
  }
  const float tau = *request.temperature;
  if (!std::isfinite(tau) || tau < limits.min_temperature || tau > limits.max_temperature) {
    return Invalid(absl::StrCat("temperature: ", tau, " is not allowed; must be finite and in [",
                                limits.min_temperature, ", ", limits.max_temperature, "]"));
  }
  params->temperature = tau;
  return absl::OkStatus();
}

std::vector<Output> OfferedOutputs(const model_store::Model& model) {
  // A SPLADE model's one output is its sparse vector over the vocabulary.
  if (model.encoder().has_splade_head()) return {Output::kSparse};
  // A late-interaction model's one output is a vector per token (its pooled [CLS] was never
  // trained as a vector of its own).
  if (model.late_interaction() != nullptr) return {Output::kMultiVector};
  std::vector<Output> offers = {Output::kDense};
  if (model.encoder().has_sparse_head()) offers.push_back(Output::kSparse);
  if (model.encoder().multi_vector_dim() > 0) offers.push_back(Output::kMultiVector);
  return offers;
}

// Which outputs, each at most once and each one the model offers; how multi-vectors travel.
// Outputs are named as the caller's door spells them.
absl::Status ValidateOutputs(const EmbedCall& call, const model_store::Model& model,
                             EmbedParams* params) {
  const EmbedRequestOptions& request = call.options;
  const std::vector<Output> offers = OfferedOutputs(model);
  const OutputSpelling spell = call.output_spelling;  // called only to word a refusal
  // No outputs named: the model's first (dense; a SPLADE model's sparse; a ColBERT model's
  // multi-vector).
  params->dense = request.outputs.empty() && offers.front() == Output::kDense;
  params->sparse = request.outputs.empty() && offers.front() == Output::kSparse;
  params->multi_vector = request.outputs.empty() && offers.front() == Output::kMultiVector;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const std::string field = absl::StrCat(call.outputs_field, "[", i, "]");
    const Output output = request.outputs[i];
    bool* wanted = output == Output::kSparse        ? &params->sparse
                   : output == Output::kMultiVector ? &params->multi_vector
                                                    : &params->dense;
    if (*wanted) {
      return Invalid(absl::StrCat(field, ": ", spell(output),
                                  " is asked for twice; each output at most once"));
    }
    if (std::find(offers.begin(), offers.end(), output) == offers.end()) {
      const std::string offered = absl::StrJoin(
          offers, ", ", [spell](std::string* out, Output o) { out->append(spell(o)); });
      const char* head = output == Output::kSparse        ? "sparse_linear or a SPLADE head"
                         : output == Output::kMultiVector ? "colbert_linear"
                         : model.late_interaction() != nullptr
                             ? "a dense output; a late-interaction model gives a vector per token"
                             : "a dense output; SPLADE has none";
      return Invalid(absl::StrCat(field, ": ", spell(output), " needs a head this model lacks (",
                                  head, "); it offers [", offered, "]"));
    }
    *wanted = true;
  }
  if (!params->multi_vector &&
      (request.multi_vector_encoding.has_value() || request.max_vectors.has_value() ||
       request.pool_factor.has_value())) {
    return Invalid(absl::StrCat(request.max_vectors   ? "max_vectors"
                                : request.pool_factor ? "pool_factor"
                                                      : "multi_vector_encoding",
                                ": applies only when outputs include ",
                                spell(Output::kMultiVector)));
  }
  if (request.pool_factor.has_value()) {
    if (*request.pool_factor < 1 || *request.pool_factor > kMaxPoolFactor) {
      return Invalid(absl::StrCat("pool_factor: ", *request.pool_factor,
                                  " is not allowed; allowed [1, ", kMaxPoolFactor, "]"));
    }
    params->pool_factor = *request.pool_factor;
  }
  params->multi_vector_encoding = request.multi_vector_encoding.value_or(VectorEncoding::kFloat32);
  if (request.max_vectors.has_value()) {
    if (*request.max_vectors < 1)
      return Invalid("max_vectors: 0 is not allowed; allowed [1, 4294967295] (unset: every token)");
    params->max_vectors = *request.max_vectors;
  }
  if (request.sparse_top_k.has_value()) {
    if (!params->sparse)
      return Invalid(absl::StrCat("sparse_top_k: applies only when outputs include ",
                                  spell(Output::kSparse)));
    if (*request.sparse_top_k < 1)
      return Invalid("sparse_top_k: 0 is not allowed; allowed [1, 4294967295] (unset: all)");
    params->sparse_top_k = *request.sparse_top_k;
  }
  return absl::OkStatus();
}

namespace {

// The prompt (given, named, or the model's default) and the task adapter (`task`, or a
// prompt_name that names one), each checked against the model.
// A request that names none of prompt, prompt_name and task takes its input_type's match.
absl::Status ValidatePromptAndTask(const EmbedCall& call, const InputTypeMatch& match,
                                   const model_store::Model& model, const RequestLimits& limits,
                                   EmbedParams* params) {
  const EmbedRequestOptions& request = call.options;
  const auto& prompts = model.sentence_transformers().prompts;
  if (!request.prompt.empty() && !request.prompt_name.empty())
    return Invalid("prompt_name: set either prompt or prompt_name, not both");
  const bool named = !request.prompt.empty() || !request.prompt_name.empty() ||
                     !request.task.empty();
  const std::string& asked_task = named ? request.task : match.task;
  const std::string& asked_prompt = named ? request.prompt_name : match.prompt_name;
  if (!named) params->input_type_match = match.task.empty() ? match.prompt_name : match.task;
  // The task adapter: `task`, or prompt_name where it names one (jina-embeddings-v3's prompts
  // are its tasks' instructions, under the tasks' names).
  const std::vector<std::string>& tasks = model.config().adapters;
  const std::string& task = asked_task.empty() ? asked_prompt : asked_task;
  if (const auto it = std::find(tasks.begin(), tasks.end(), task); it != tasks.end()) {
    params->adapter = static_cast<int32_t>(it - tasks.begin());
  } else if (!asked_task.empty()) {
    return Invalid(absl::StrCat("task: ", QuotedValue(asked_task),
                                tasks.empty() ? " is not served: the model has no task adapters"
                                              : " is not one of the model's tasks [",
                                absl::StrJoin(tasks, ", "), tasks.empty() ? "" : "]"));
  }
  // A task's instruction, where the model has a prompt of its name and the request no other.
  std::string_view prompt_name = asked_prompt;
  if (prompt_name.empty() && request.prompt.empty() && params->adapter >= 0 &&
      prompts.count(asked_task) > 0) {
    prompt_name = asked_task;
  }
  if (!prompt_name.empty()) {
    auto it = prompts.find(std::string(prompt_name));
    if (it == prompts.end()) {
      std::vector<std::string> names;
      for (const auto& [name, text] : prompts) names.push_back(name);
      return Invalid(absl::StrCat("prompt_name: ", QuotedValue(asked_prompt),
                                  " is not one of the model's prompts [",
                                  absl::StrJoin(names, ", "), "]"));
    }
    params->prompt = it->second;
    RETURN_IF_ERROR(ValidateInputs(call.inputs, params->prompt.size(), limits, call.inputs_field));
  } else if (!request.prompt.empty()) {
    params->prompt = request.prompt;
  } else if (auto it = prompts.find(model.sentence_transformers().default_prompt_name);
             it != prompts.end()) {
    params->prompt = it->second;  // as sentence-transformers applies default_prompt_name
    RETURN_IF_ERROR(ValidateInputs(call.inputs, params->prompt.size(), limits, call.inputs_field));
  }
  return absl::OkStatus();
}

// Cohere's max_tokens: one window of at most that many content tokens (the model's window
// where it is smaller), so only with a one-window strategy, and not beside chunk_tokens.
absl::Status ValidateMaxTokens(const EmbedRequestOptions& request, uint32_t window,
                               EmbedParams* params) {
  if (!request.max_tokens.has_value()) return absl::OkStatus();
  if (*request.max_tokens < 1) {
    return Invalid(absl::StrCat("max_tokens: 0 is not allowed; allowed [1, 4294967295] (past the "
                                "model's window of ", window, " tokens, the window)"));
  }
  if (params->traits.plan != PlanRule::kReject && params->traits.plan != PlanRule::kTruncate) {
    return Invalid(absl::StrCat("max_tokens: cuts each input to one window; allowed with strategy "
                                "reject or truncate, not ", StrategyName(params->strategy),
                                " (chunk_tokens sizes its chunks)"));
  }
  if (request.chunk_tokens.has_value())
    return Invalid("max_tokens: set either max_tokens or chunk_tokens, not both");
  params->max_tokens = std::min(*request.max_tokens, window);
  params->chunk_tokens = params->max_tokens;
  return absl::OkStatus();
}

// Only a late-interaction model takes a role. A query is one window of the model's query
// length, cut as its code cuts it (TRUNCATE, or REJECT when asked), so chunking is refused.
// `role` is the request's input_role, else its input_type's.
absl::Status ValidateRole(const EmbedRequestOptions& request,
                          std::optional<model_store::InputRole> role,
                          const model_store::Model& model, EmbedParams* params) {
  if (!role.has_value()) return absl::OkStatus();
  const model_store::LateInteraction* late = model.late_interaction();
  if (late == nullptr) {
    return Invalid(
        "input_role: only a late-interaction (ColBERT) model encodes queries and documents "
        "differently; leave it unset for this model (a prompt_name may name its query prompt)");
  }
  params->role = *role;
  if (params->role != model_store::InputRole::kQuery) return absl::OkStatus();
  if (params->pool_factor > 1)
    return Invalid("pool_factor: pools a document's vectors; a query keeps every one");
  if (request.chunk_tokens.has_value() || request.chunk_overlap_tokens.has_value()) {
    return Invalid(absl::StrCat(
        request.chunk_tokens.has_value() ? "chunk_tokens" : "chunk_overlap_tokens",
        ": a query is one window of the model's query_length (", late->config().query_length,
        " tokens); leave chunking unset"));
  }
  if (params->traits.plan != PlanRule::kReject) params->SetStrategy(Strategy::kTruncate);
  params->chunk_tokens = static_cast<uint32_t>(late->query_content_tokens());
  params->overlap_tokens = 0;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EmbedParams> ValidateEmbedCall(const EmbedCall& call,
                                              const model_store::Model& model,
                                              const RequestLimits& limits) {
  const EmbedRequestOptions& request = call.options;
  EmbedParams params;
  // Before the prompt is resolved or copied anywhere: what the inputs and a request prompt
  // will cost once the prompt is prepended to each.
  RETURN_IF_ERROR(ValidateInputs(call.inputs, request.prompt.size(), limits, call.inputs_field));

  RETURN_IF_ERROR(ValidateTemperature(request, limits, &params));
  params.SetStrategy(request.strategy.value_or(limits.default_strategy));
  params.keep_end = request.truncation_side == TruncationSide::kKeepEnd;

  const auto window = static_cast<uint32_t>(model.max_content_tokens());
  params.chunk_tokens = window;
  if (request.chunk_tokens.has_value()) {
    if (*request.chunk_tokens < 1 || *request.chunk_tokens > window) {
      return Invalid(absl::StrCat("chunk_tokens: ", *request.chunk_tokens,
                                  " is outside the model's window; allowed [1, ", window, "]"));
    }
    params.chunk_tokens = *request.chunk_tokens;
  }
  if (request.chunk_overlap_tokens.has_value()) {
    if (*request.chunk_overlap_tokens >= params.chunk_tokens) {
      return Invalid(absl::StrCat("chunk_overlap_tokens: ", *request.chunk_overlap_tokens,
                                  " must be less than chunk_tokens (", params.chunk_tokens,
                                  "); allowed [0, ", params.chunk_tokens - 1, "]"));
    }
    params.overlap_tokens = *request.chunk_overlap_tokens;
  }
  RETURN_IF_ERROR(ValidateMaxTokens(request, window, &params));
  RETURN_IF_ERROR(ValidateOutputs(call, model, &params));
  const InputTypeMatch match =
      request.input_type.has_value() ? MatchInputType(*request.input_type, model) : InputTypeMatch{};
  RETURN_IF_ERROR(ValidateRole(request, request.input_role ? request.input_role : match.role,
                               model, &params));
  if (params.sparse && params.traits.needs_token_states && model.encoder().has_splade_head()) {
    return Invalid("strategy: late chunking pools token states, and a SPLADE model's sparse "
                   "output is one vector per sequence; allowed every other strategy");
  }
  params.token_states = request.token_states;
  if (params.token_states && params.traits.plan != PlanRule::kReject &&
      params.traits.plan != PlanRule::kTruncate) {
    return Invalid("strategy: token states come from one window; allowed REJECT or TRUNCATE");
  }
  params.normalize = request.normalize.value_or(true);
  const auto width = static_cast<uint32_t>(model.encoder().embedding_dim());
  if (request.dimensions.has_value()) {
    if (*request.dimensions < 1 || *request.dimensions > width) {
      return Invalid(absl::StrCat(call.dimensions_field, ": ", *request.dimensions,
                                  " is outside the model's size; allowed [1, ", width, "]"));
    }
    params.dimensions = *request.dimensions;
  }

  RETURN_IF_ERROR(ValidatePromptAndTask(call, match, model, limits, &params));
  return params;
}

absl::StatusOr<EmbedParams> ValidateScoreCall(const EmbedCall& call, const ScoreOptions& options,
                                              const model_store::Model& model,
                                              const RequestLimits& limits) {
  ASSIGN_OR_RETURN(EmbedParams params, ValidateEmbedCall(call, model, limits));
  if (params.traits.returns_chunks || params.traits.needs_token_states) {
    return Invalid(absl::StrCat("strategy: ", StrategyName(params.strategy),
                                " does not score a pair; allowed reject, truncate, chunk_max, "
                                "chunk_mean, chunk_weighted_mean (return_chunks gives each "
                                "chunk's score)"));
  }
  if (!options.instruction.empty()) {
    if (!model.score_prompt().takes_instruction()) {
      return Invalid(
          "instruction: this model's prompt takes none (a reranker reads one where "
          "its config names a score prompt with {instruction}, as Qwen3-Reranker's "
          "does); leave it empty");
    }
    const auto size = static_cast<int64_t>(options.instruction.size());
    if (size > MaxInputBytes(limits)) {
      return Invalid(absl::StrCat("instruction: ", size,
                                  " bytes of text exceed the bound; allowed [0, ",
                                  MaxInputBytes(limits), "]"));
    }
  }
  params.normalize = false;
  params.dimensions = 0;
  params.traits.returns_chunks = options.return_chunks;
  return params;
}

absl::Status ValidatePairFirsts(const std::vector<std::string>& firsts, const std::string& field,
                                const TextInputs& inputs, const RequestLimits& limits) {
  int64_t bytes = 0;
  for (const std::string& input : inputs) bytes += static_cast<int64_t>(input.size());
  const int64_t max_input = MaxInputBytes(limits);
  for (size_t i = 0; i < firsts.size(); ++i) {
    const std::string name = firsts.size() == 1 ? field : absl::StrCat(field, "[", i, "]");
    const auto size = static_cast<int64_t>(firsts[i].size());
    if (size > max_input) {
      return Invalid(absl::StrCat(name, ": ", size, " bytes of text exceed the bound; allowed [0, ",
                                  max_input, "] (", kMaxBytesPerToken,
                                  " bytes for each token --max-tokens-per-document allows)"));
    }
    bytes += size;
  }
  if (bytes > limits.max_request_bytes) {
    return Invalid(absl::StrCat(field, " and inputs: ", bytes,
                                " bytes of text exceed the bound; allowed [0, ",
                                limits.max_request_bytes, "] (--max-request-bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace embedding::server
