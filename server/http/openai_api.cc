#include "server/http/openai_api.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/chunk_planner.h"
#include "server/core/reported_code.h"
#include "server/core/request_validation.h"
#include "server/core/strategy.h"
#include "server/http/embed_options_json.h"
#include "server/http/json_body.h"
#include "server/http/token_outputs_json.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view param, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(param, ": ", reason));
}

// A JSON value's type, for error messages.
std::string TypeName(const Json& value) { return value.type_name(); }

// One token id: an integer in [0, 2^31 - 1).
absl::StatusOr<int32_t> ReadTokenId(const Json& value, const std::string& param) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() >= std::numeric_limits<int32_t>::max()) {
    return Invalid(param, "must be a token id, an integer in [0, 2147483646]");
  }
  return static_cast<int32_t>(value.get<int64_t>());
}

constexpr char kInputShapes[] =
    "must be a string, an array of strings, an array of token ids, or an array of arrays of "
    "token ids";

absl::Status ReadInput(const Json& input, const RequestLimits& limits,
                       OpenAiEmbeddingsRequest* out) {
  const auto max_inputs = static_cast<size_t>(limits.max_inputs_per_request);
  // Every token id costs 4 bytes of --max-request-bytes, as its text would cost its bytes.
  const auto max_ids = static_cast<size_t>(limits.max_request_bytes / 4);
  if (input.is_string()) {
    out->call.inputs = TextInputs{input.get<std::string>()};
    return absl::OkStatus();
  }
  if (!input.is_array() || input.empty()) return Invalid("input", kInputShapes);
  const Json& first = input.front();
  if (first.is_number_integer()) {  // one document of token ids
    if (input.size() > max_ids)
      return Invalid("input", absl::StrCat(input.size(), " token ids; allowed [1, ", max_ids,
                                           "] (--max-request-bytes / 4)"));
    std::vector<int32_t> ids;
    ids.reserve(input.size());
    for (size_t t = 0; t < input.size(); ++t) {
      ASSIGN_OR_RETURN(int32_t id, ReadTokenId(input[t], absl::StrCat("input[", t, "]")));
      ids.push_back(id);
    }
    out->call.inputs = TokenInputs{std::move(ids)};
    return absl::OkStatus();
  }
  if (input.size() > max_inputs) {
    return Invalid("input", absl::StrCat(input.size(), " inputs; allowed [1, ", max_inputs,
                                         "] (--max-inputs-per-request)"));
  }
  if (first.is_string()) {
    TextInputs& texts = out->call.inputs.emplace<TextInputs>();
    texts.reserve(input.size());
    for (size_t i = 0; i < input.size(); ++i) {
      if (!input[i].is_string())
        return Invalid(absl::StrCat("input[", i, "]"),
                       absl::StrCat("must be a string like input[0], not ", TypeName(input[i])));
      texts.push_back(input[i].get<std::string>());
    }
    return absl::OkStatus();
  }
  if (!first.is_array()) return Invalid("input", kInputShapes);
  TokenInputs& documents = out->call.inputs.emplace<TokenInputs>();
  documents.reserve(input.size());
  size_t total = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string param = absl::StrCat("input[", i, "]");
    if (!input[i].is_array())
      return Invalid(param, absl::StrCat("must be an array of token ids like input[0], not ",
                                         TypeName(input[i])));
    total += input[i].size();
    if (total > max_ids) {
      return Invalid("input", absl::StrCat("more than ", max_ids, " token ids in all; allowed [1, ",
                                           max_ids, "] (--max-request-bytes / 4)"));
    }
    std::vector<int32_t> ids;
    ids.reserve(input[i].size());
    for (size_t t = 0; t < input[i].size(); ++t) {
      ASSIGN_OR_RETURN(int32_t id, ReadTokenId(input[i][t], absl::StrCat(param, "[", t, "]")));
      ids.push_back(id);
    }
    documents.push_back(std::move(ids));
  }
  return absl::OkStatus();
}

absl::Status ReadField(const std::string& key, const Json& value, const RequestLimits& limits,
                       OpenAiEmbeddingsRequest* out) {
  EmbedRequestOptions& request = out->call.options;
  if (key == "input") return ReadInput(value, limits, out);
  bool taken = false;
  RETURN_IF_ERROR(ReadEmbedOption(key, value, &request, &taken));
  if (taken) return absl::OkStatus();
  if (key == "model") {
    ASSIGN_OR_RETURN(request.model, ReadJsonString(value, "model"));
  } else if (key == "encoding_format") {
    ASSIGN_OR_RETURN(std::string format, ReadJsonString(value, "encoding_format"));
    if (format != "float" && format != "base64")
      return Invalid("encoding_format", "must be \"float\" or \"base64\"");
    out->base64 = format == "base64";
  } else if (key == "dimensions") {
    ASSIGN_OR_RETURN(uint32_t dims, ReadJsonCount(value, "dimensions"));
    request.dimensions = dims;
  } else if (key == "user") {
    ASSIGN_OR_RETURN(std::string user, ReadJsonString(value, "user"));  // accepted, unused
  } else if (key == "outputs") {
    if (!value.is_array() || value.size() > 3)
      return Invalid("outputs",
                     "must be an array of at most 3 of \"dense\", \"sparse\", "
                     "\"multi_vector\"");
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string param = absl::StrCat("outputs[", i, "]");
      ASSIGN_OR_RETURN(std::string name, ReadJsonString(value[i], param.c_str()));
      ASSIGN_OR_RETURN(Output output, ParseOutputName(name, param));
      request.outputs.push_back(output);
    }
  } else if (key == "multi_vector_encoding") {
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "multi_vector_encoding"));
    ASSIGN_OR_RETURN(request.multi_vector_encoding, ParseVectorEncoding(name));
  } else if (key == "max_vectors") {
    ASSIGN_OR_RETURN(uint32_t count, ReadJsonCount(value, "max_vectors"));
    request.max_vectors = count;
  } else if (key == "sparse_top_k") {
    ASSIGN_OR_RETURN(uint32_t count, ReadJsonCount(value, "sparse_top_k"));
    request.sparse_top_k = count;
  } else if (key == "pool_factor") {
    ASSIGN_OR_RETURN(uint32_t factor, ReadJsonCount(value, "pool_factor"));
    request.pool_factor = factor;
  } else if (key == "input_role") {  // a late-interaction model's queries or documents
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "input_role"));
    ASSIGN_OR_RETURN(request.input_role, ParseInputRole(name));
  } else {
    return Invalid(key.size() > 64 ? key.substr(0, 64) + "..." : key,
                   absl::StrCat("unknown field; allowed: model, input, encoding_format, "
                                "dimensions, user, outputs, multi_vector_encoding, max_vectors, "
                                "pool_factor, sparse_top_k, input_role, ",
                                EmbedOptionNames()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpenAiEmbeddingsRequest> ParseOpenAiEmbeddingsRequest(std::string_view body,
                                                                     const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  if (!json.contains("input")) return Invalid("input", "is required");
  OpenAiEmbeddingsRequest out;
  for (const auto& [key, value] : json.items()) {
    RETURN_IF_ERROR(ReadField(key, value, limits, &out));
  }
  return out;
}

namespace {

using Json = nlohmann::json;

Json Vector(const std::vector<float>& values, bool base64) {
  if (!base64) return Json(values);
  // OpenAI's base64 is the float32 array's bytes, little-endian (this CPU's order).
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

Json SpanOf(const Span& span) { return Json::array({span.begin, span.end}); }

Json Details(const DocumentResult& doc, const EmbedAnswer& answer, bool base64) {
  const EmbedParams& params = answer.params;
  // Only sparse output names tokens (and a model is there whenever it was asked for).
  const model_store::Tokenizer* tokenizer =
      params.sparse ? &answer.model->model->tokenizer() : nullptr;
  Json details = {{"token_count", doc.token_count},
                  {"chunk_count", doc.chunk_count},
                  {"truncated", doc.truncated},
                  {"temperature", doc.temperature},
                  {"length_bucket", doc.length_bucket},
                  {"high_frequency_ratio", MeanHighFrequencyRatio(doc)},
                  {"sequence_temperatures", doc.sequence_temperatures}};
  if (!doc.sequence_local_temperatures.empty())
    details["sequence_local_temperatures"] = doc.sequence_local_temperatures;
  if (params.sparse) details["sparse"] = SparseJson(doc.sparse, *tokenizer);
  if (params.multi_vector)
    details["multi_vector"] = MultiVectorJson(doc.multi_vector, params.multi_vector_encoding);
  if (!doc.chunks.empty()) {
    Json chunks = Json::array();
    for (const ChunkResult& chunk : doc.chunks) {
      Json item = {
          {"embedding", Vector(params.dense ? chunk.vector : std::vector<float>{}, base64)},
          {"token_span", SpanOf(chunk.tokens)},
          {"char_span", SpanOf(chunk.chars)},
          {"byte_span", SpanOf(chunk.bytes)},
          {"temperature", chunk.temperature}};
      if (params.sparse) item["sparse"] = SparseJson(chunk.sparse, *tokenizer);
      if (params.multi_vector)
        item["multi_vector"] = MultiVectorJson(chunk.multi_vector, params.multi_vector_encoding);
      chunks.push_back(std::move(item));
    }
    details["chunks"] = std::move(chunks);
  }
  return details;
}

// What the model offers, as OpenAI requests name it: "dense", "sparse", "multi_vector".
Json OutputNames(const model_store::Model& model) {
  Json names = Json::array();
  for (Output output : OfferedOutputs(model)) names.push_back(OutputName(output));
  return names;
}

// What AUTO applies, as ModelInfo.tempscale_schedule says it over gRPC.
Json ScheduleJson(const model_store::TempScaleSchedule& schedule) {
  Json points = Json::array();
  for (const model_store::SchedulePoint& p : schedule.points())
    points.push_back({{"min_tokens", p.min_tokens}, {"tau", p.tau}});
  Json out = {
      {"form", schedule.form_name()}, {"points", std::move(points)}, {"source", schedule.source()}};
  if (schedule.form() == model_store::TempScaleSchedule::Form::kLogRatio) {
    out["n_ref"] = schedule.n_ref();
    out["alpha"] = schedule.alpha();
    out["tau_min"] = schedule.tau_min();
  }
  return out;
}

const char* ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return "invalid_request_error";
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_error";
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return "server_unavailable";
    default:
      return "server_error";
  }
}

}  // namespace

absl::StatusOr<ParsedEmbed> ParseOpenAiEmbed(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(OpenAiEmbeddingsRequest request, ParseOpenAiEmbeddingsRequest(body, limits));
  return ParsedEmbed{std::move(request.call), [base64 = request.base64](const EmbedAnswer& answer) {
                       return OpenAiEmbeddingsBody(answer, base64);
                     }};
}

std::string OpenAiEmbeddingsBody(const EmbedAnswer& answer, bool base64) {
  Json data = Json::array();
  const auto& documents = answer.result.documents;
  for (size_t i = 0; i < documents.size(); ++i) {
    data.push_back(
        {{"object", "embedding"},
         {"index", i},
         {"embedding",
          Vector(answer.params.dense ? documents[i].vector : std::vector<float>{}, base64)},
         {"details", Details(documents[i], answer, base64)}});
  }
  const uint64_t tokens = answer.result.tokens;
  Json body = {{"object", "list"},
               {"data", std::move(data)},
               {"model", answer.model->name},
               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string OpenAiModelsBody(const std::vector<std::shared_ptr<const ServedModel>>& models) {
  Json data = Json::array();
  for (const auto& model : models) {
    Json item = {{"id", model->name},
                 {"object", "model"},
                 {"created", 0},  // unknown: checkpoints carry no creation time
                 {"owned_by", "embedding-server"},
                 {"version", model->version},
                 {"dtype", model_store::ComputeDTypeName(model->model->encoder().dtype())},
                 {"tempscale_schedule", ScheduleJson(model->model->tempscale())},
                 {"outputs", OutputNames(*model->model)},
                 {"multi_vector_dimensions", model->model->encoder().multi_vector_dim()}};
    if (const std::optional<double> bound = model->model->batch_invariance_bound()) {
      item["batch_invariance_bound"] = *bound;
    }
    if (model->hub) {
      item["repository"] = model->hub->repository;
      item["revision"] = model->hub->revision;
      item["commit"] = model->hub->commit;
    }
    data.push_back(std::move(item));
  }
  return Json({{"object", "list"}, {"data", std::move(data)}}).dump();
}

std::string OpenAiErrorBody(const absl::Status& status) {
  return ErrorObjectBody(status, /*openai_input=*/true);
}

std::string ErrorObjectBody(const absl::Status& status, bool openai_input) {
  std::string message(status.message());
  if (status.GetPayload(kPastWindowPayload).has_value()) {
    absl::StrAppend(&message,
                    " (send \"strategy\": \"truncate\", or \"chunk_mean\" or another chunk_* "
                    "strategy, for long text)");
  }
  Json param = nullptr;
  // Messages name their field first: "temperature: ...", "inputs[2]: ...", "model: ...".
  const size_t colon = message.find(": ");
  if (colon != std::string::npos && colon <= 80 && message.find_first_of(" '\"", 0) >= colon) {
    std::string field = message.substr(0, colon);
    if (openai_input && absl::StartsWith(field, "inputs")) field = "input" + field.substr(6);
    if (!absl::StartsWith(field, "--")) param = field;
  }
  Json error = {{"message", message},
                {"type", ErrorType(status.code())},
                {"param", param},
                {"code", absl::AsciiStrToLower(absl::StatusCodeToString(ReportedCode(status)))}};
  return Json({{"error", std::move(error)}}).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace embedding::server
