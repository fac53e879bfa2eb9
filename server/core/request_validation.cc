#include "server/core/request_validation.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace embedding::server {
namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// INVALID_ARGUMENT naming `field` unless `value` is a value of the generated enum.
absl::Status CheckEnum(const google::protobuf::EnumDescriptor* descriptor, int value,
                       absl::string_view field) {
  if (descriptor->FindValueByNumber(value) != nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  int min = descriptor->value(0)->number(), max = min;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    names.push_back(descriptor->value(i)->name());
    min = std::min(min, descriptor->value(i)->number());
    max = std::max(max, descriptor->value(i)->number());
  }
  return Invalid(absl::StrCat(field, ": unknown value ", value, "; allowed ", min, "..", max, " (",
                              absl::StrJoin(names, ", "), ")"));
}

}  // namespace

absl::Status ValidateInputCount(size_t count, const RequestLimits& limits) {
  if (count == 0)
    return Invalid("inputs: at least one input is required (an empty string is a valid input)");
  if (count > limits.max_inputs_per_request) {
    return Invalid(absl::StrCat("inputs: ", count, " inputs exceed the bound; allowed [1, ",
                                limits.max_inputs_per_request, "] (--max-inputs-per-request)"));
  }
  return absl::OkStatus();
}

int64_t MaxInputBytes(const RequestLimits& limits) {
  return kMaxBytesPerToken * static_cast<int64_t>(limits.max_tokens_per_document);
}

absl::Status ValidateTextBytes(const TextInputs& inputs, size_t prompt_bytes,
                               const RequestLimits& limits) {
  int64_t bytes = 0;
  for (const auto& input : inputs) bytes += static_cast<int64_t>(input.size() + prompt_bytes);
  if (bytes > limits.max_request_bytes) {
    return Invalid(absl::StrCat(
        prompt_bytes > 0 ? "inputs and prompt: " : "inputs: ", bytes, " bytes of text",
        prompt_bytes > 0 ? " (the prompt counts once per input)" : "",
        " exceed the bound; allowed [0, ", limits.max_request_bytes, "] (--max-request-bytes)"));
  }
  const int64_t max_input = MaxInputBytes(limits);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto input = static_cast<int64_t>(inputs[i].size() + prompt_bytes);
    if (input <= max_input) continue;
    return Invalid(absl::StrCat(
        "inputs[", i, "]: ", input, " bytes of text", prompt_bytes > 0 ? " with the prompt" : "",
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
                            const RequestLimits& limits) {
  if (const auto* texts = std::get_if<TextInputs>(&inputs)) {
    RETURN_IF_ERROR(ValidateInputCount(texts->size(), limits));
    return ValidateTextBytes(*texts, prompt_bytes, limits);
  }
  const auto& ids = std::get<TokenInputs>(inputs);
  RETURN_IF_ERROR(ValidateInputCount(ids.size(), limits));
  return ValidateTokenCount(ids, limits);
}

// FIXED: the request's tau within the server's range, or the default. AUTO: no tau of its own.
absl::Status ValidateTemperature(const EmbedRequestOptions& request, const RequestLimits& limits,
                                 EmbedParams* params) {
  RETURN_IF_ERROR(
      CheckEnum(v1::TemperatureMode_descriptor(), request.temperature_mode, "temperature_mode"));
  params->auto_temperature = request.temperature_mode == v1::TEMPERATURE_MODE_AUTO;
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

std::vector<v1::EmbeddingOutput> OfferedOutputs(const model_store::Model& model) {
  std::vector<v1::EmbeddingOutput> offers = {v1::EMBEDDING_OUTPUT_DENSE};
  if (model.encoder().has_sparse_head()) offers.push_back(v1::EMBEDDING_OUTPUT_SPARSE);
  if (model.encoder().multi_vector_dim() > 0) offers.push_back(v1::EMBEDDING_OUTPUT_MULTI_VECTOR);
  return offers;
}

// Which outputs, each at most once and each one the model offers; how multi-vectors travel.
absl::Status ValidateOutputs(const EmbedRequestOptions& request, const model_store::Model& model,
                             EmbedParams* params) {
  const std::vector<v1::EmbeddingOutput> offers = OfferedOutputs(model);
  const std::string offered = absl::StrJoin(
      offers, ", ",
      [](std::string* out, v1::EmbeddingOutput o) { out->append(v1::EmbeddingOutput_Name(o)); });
  params->dense = request.outputs.empty();
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const std::string field = absl::StrCat("outputs[", i, "]");
    RETURN_IF_ERROR(CheckEnum(v1::EmbeddingOutput_descriptor(), request.outputs[i], field));
    const v1::EmbeddingOutput output = request.outputs[i] == v1::EMBEDDING_OUTPUT_UNSPECIFIED
                                           ? v1::EMBEDDING_OUTPUT_DENSE
                                           : request.outputs[i];
    bool* wanted = output == v1::EMBEDDING_OUTPUT_SPARSE         ? &params->sparse
                   : output == v1::EMBEDDING_OUTPUT_MULTI_VECTOR ? &params->multi_vector
                                                                 : &params->dense;
    if (*wanted) {
      return Invalid(absl::StrCat(field, ": ", v1::EmbeddingOutput_Name(output),
                                  " is asked for twice; each output at most once"));
    }
    if (std::find(offers.begin(), offers.end(), output) == offers.end()) {
      return Invalid(absl::StrCat(
          field, ": ", v1::EmbeddingOutput_Name(output), " needs a head this model lacks (",
          output == v1::EMBEDDING_OUTPUT_SPARSE ? "sparse_linear" : "colbert_linear",
          "); it offers [", offered, "]"));
    }
    *wanted = true;
  }
  RETURN_IF_ERROR(CheckEnum(v1::VectorEncoding_descriptor(), request.multi_vector_encoding,
                            "multi_vector_encoding"));
  if (!params->multi_vector && (request.multi_vector_encoding != v1::VECTOR_ENCODING_UNSPECIFIED ||
                                request.max_vectors.has_value())) {
    return Invalid(absl::StrCat(request.max_vectors ? "max_vectors" : "multi_vector_encoding",
                                ": applies only when outputs include MULTI_VECTOR"));
  }
  if (request.multi_vector_encoding != v1::VECTOR_ENCODING_UNSPECIFIED)
    params->multi_vector_encoding = request.multi_vector_encoding;
  if (request.max_vectors.has_value()) {
    if (*request.max_vectors < 1)
      return Invalid("max_vectors: 0 is not allowed; allowed [1, 4294967295] (unset: every token)");
    params->max_vectors = *request.max_vectors;
  }
  return absl::OkStatus();
}

absl::StatusOr<EmbedParams> ValidateEmbedCall(const EmbedCall& call,
                                              const model_store::Model& model,
                                              const RequestLimits& limits) {
  const EmbedRequestOptions& request = call.options;
  EmbedParams params;
  // Before the prompt is resolved or copied anywhere: what the inputs and a request prompt
  // will cost once the prompt is prepended to each.
  RETURN_IF_ERROR(ValidateInputs(call.inputs, request.prompt.size(), limits));

  RETURN_IF_ERROR(ValidateTemperature(request, limits, &params));
  RETURN_IF_ERROR(CheckEnum(v1::LongTextStrategy_descriptor(), request.strategy, "strategy"));
  params.strategy = request.strategy == v1::LONG_TEXT_STRATEGY_UNSPECIFIED ? limits.default_strategy
                                                                           : request.strategy;
  RETURN_IF_ERROR(
      CheckEnum(v1::TruncationSide_descriptor(), request.truncation_side, "truncation_side"));
  params.keep_end = request.truncation_side == v1::TRUNCATION_SIDE_KEEP_END;

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
  RETURN_IF_ERROR(ValidateOutputs(request, model, &params));
  params.token_states = request.token_states;
  if (params.token_states && TraitsOf(params.strategy).plan != PlanRule::kReject &&
      TraitsOf(params.strategy).plan != PlanRule::kTruncate) {
    return Invalid("strategy: token states come from one window; allowed REJECT or TRUNCATE");
  }
  params.normalize = request.normalize.value_or(true);
  const auto hidden = static_cast<uint32_t>(model.config().hidden_size);
  if (request.dimensions.has_value()) {
    if (*request.dimensions < 1 || *request.dimensions > hidden) {
      return Invalid(absl::StrCat("dimensions: ", *request.dimensions,
                                  " is outside the model's size; allowed [1, ", hidden, "]"));
    }
    params.dimensions = *request.dimensions;
  }

  const auto& prompts = model.sentence_transformers().prompts;
  if (!request.prompt.empty() && !request.prompt_name.empty())
    return Invalid("prompt_name: set either prompt or prompt_name, not both");
  if (!request.prompt_name.empty()) {
    auto it = prompts.find(request.prompt_name);
    if (it == prompts.end()) {
      std::vector<std::string> names;
      for (const auto& [name, text] : prompts) names.push_back(name);
      return Invalid(absl::StrCat("prompt_name: ", QuotedValue(request.prompt_name),
                                  " is not one of the model's prompts [",
                                  absl::StrJoin(names, ", "), "]"));
    }
    params.prompt = it->second;
    RETURN_IF_ERROR(ValidateInputs(call.inputs, params.prompt.size(), limits));
  } else if (!request.prompt.empty()) {
    params.prompt = request.prompt;
  } else if (auto it = prompts.find(model.sentence_transformers().default_prompt_name);
             it != prompts.end()) {
    params.prompt = it->second;  // as sentence-transformers applies default_prompt_name
    RETURN_IF_ERROR(ValidateInputs(call.inputs, params.prompt.size(), limits));
  }
  return params;
}

}  // namespace embedding::server
