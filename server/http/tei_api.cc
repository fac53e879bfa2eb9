#include "server/http/tei_api.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/encoder/encoder.h"
#include "nlohmann/json.hpp"
#include "server/core/chunk_planner.h"
#include "server/http/api_call.h"
#include "server/http/json_body.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", reason));
}

// A field that may be absent or null; present, it must have the type `check` accepts.
template <typename T, typename Check>
absl::StatusOr<std::optional<T>> Optional(const Json& body, const char* field, Check check,
                                          const char* type) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::optional<T>();
  if (!check(*it)) return Invalid(field, absl::StrCat("must be ", type));
  return std::optional<T>(it->get<T>());
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& body, const char* field) {
  return Optional<bool>(
      body, field, [](const Json& v) { return v.is_boolean(); }, "true or false");
}

absl::StatusOr<std::optional<std::string>> OptionalString(const Json& body, const char* field) {
  return Optional<std::string>(
      body, field, [](const Json& v) { return v.is_string(); }, "a string");
}

}  // namespace

absl::StatusOr<TextInputs> ReadTeiTexts(const Json& body, const char* field,
                                        const RequestLimits& limits) {
  auto it = body.find(field);
  if (it == body.end()) return Invalid(field, "is required");
  if (it->is_string()) return TextInputs{it->get<std::string>()};
  if (!it->is_array() || it->empty())
    return Invalid(field, "must be a string or a non-empty array of strings");
  if (it->size() > limits.max_inputs_per_request) {
    return Invalid(field,
                   absl::StrCat(it->size(), " inputs; allowed [1, ", limits.max_inputs_per_request,
                                "] (--max-inputs-per-request)"));
  }
  TextInputs texts;
  texts.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) return Invalid(absl::StrCat(field, "[", i, "]"), "must be a string");
    texts.push_back((*it)[i].get<std::string>());
  }
  return texts;
}

absl::StatusOr<TeiTruncation> ReadTeiTruncation(const Json& body) {
  TeiTruncation out;
  ASSIGN_OR_RETURN(out.truncate, OptionalBool(body, "truncate"));
  ASSIGN_OR_RETURN(std::optional<std::string> direction,
                   OptionalString(body, "truncation_direction"));
  if (direction.has_value()) {
    const std::string d = absl::AsciiStrToLower(*direction);
    if (d != "left" && d != "right")
      return Invalid("truncation_direction", "must be \"Left\" or \"Right\"");
    out.side = d == "left" ? TruncationSide::kKeepEnd : TruncationSide::kKeepStart;
  }
  return out;
}

absl::StatusOr<bool> ReadTeiExtension(const std::string& key, const Json& value,
                                      EmbedRequestOptions* options) {
  const bool known = key == "temperature" || key == "temperature_mode" || key == "task";
  if (!known || value.is_null()) return known;  // null: unset, as TEI's optional fields
  if (key == "task") {
    ASSIGN_OR_RETURN(options->task, ReadJsonString(value, "task"));
    return true;
  }
  return ReadTemperatureField(key, value, &options->temperature, &options->temperature_mode);
}

namespace {

// The fields TEI defines for each embed route (its OpenAPI document), beside this server's
// extensions.
bool IsTeiEmbedField(TeiRoute route, const std::string& key) {
  static const std::set<std::string> kShared = {"inputs", "truncate", "truncation_direction",
                                                "prompt_name"};
  if (kShared.count(key) > 0) return true;
  switch (route) {
    case TeiRoute::kEmbed:
      return key == "normalize" || key == "dimensions";
    case TeiRoute::kEmbedSparse:
      return key == "sparse_top_k";  // this server's: the largest k weights only
    case TeiRoute::kEmbedAll:
      return false;
  }
  return false;
}

}  // namespace

absl::StatusOr<EmbedCall> ParseTeiEmbedRequest(std::string_view body, TeiRoute route,
                                               const RequestLimits& limits,
                                               std::vector<std::string>* ignored) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  EmbedCall call;
  ASSIGN_OR_RETURN(TextInputs texts, ReadTeiTexts(json, "inputs", limits));
  call.inputs = std::move(texts);
  EmbedRequestOptions& options = call.options;
  ASSIGN_OR_RETURN(TeiTruncation truncation, ReadTeiTruncation(json));
  options.strategy = truncation.truncate.value_or(false) ? Strategy::kTruncate : Strategy::kReject;
  options.truncation_side = truncation.side;
  ASSIGN_OR_RETURN(std::optional<std::string> prompt_name, OptionalString(json, "prompt_name"));
  options.prompt_name = prompt_name.value_or("");
  for (const auto& [key, value] : json.items()) {
    if (IsTeiEmbedField(route, key)) continue;
    ASSIGN_OR_RETURN(bool extension, ReadTeiExtension(key, value, &options));
    if (!extension && ignored != nullptr) ignored->push_back(key);
  }
  switch (route) {
    case TeiRoute::kEmbed: {
      options.outputs = {Output::kDense};  // a SPLADE model, which has none, refuses it
      ASSIGN_OR_RETURN(std::optional<bool> normalize, OptionalBool(json, "normalize"));
      options.normalize = normalize;
      auto dims = json.find("dimensions");
      if (dims != json.end() && !dims->is_null()) {
        if (!dims->is_number_unsigned() || dims->get<uint64_t>() > UINT32_MAX)
          return Invalid("dimensions", "must be a non-negative integer");
        options.dimensions = static_cast<uint32_t>(dims->get<uint64_t>());
      }
      break;
    }
    case TeiRoute::kEmbedSparse: {
      options.outputs = {Output::kSparse};
      auto top_k = json.find("sparse_top_k");
      if (top_k != json.end() && !top_k->is_null()) {
        ASSIGN_OR_RETURN(options.sparse_top_k, ReadJsonCount(*top_k, "sparse_top_k"));
      }
      break;
    }
    case TeiRoute::kEmbedAll:
      options.token_states = true;
      break;
  }
  return call;
}

EmbedParser TeiEmbedParser(TeiRoute route) {
  return [route](std::string_view body,
                 const RequestLimits& limits) -> absl::StatusOr<ParsedEmbed> {
    std::vector<std::string> ignored;
    ASSIGN_OR_RETURN(EmbedCall call, ParseTeiEmbedRequest(body, route, limits, &ignored));
    return ParsedEmbed{std::move(call),
                       [route](const EmbedAnswer& answer) { return TeiEmbedBody(answer, route); },
                       std::move(ignored)};
  };
}

absl::StatusOr<TokenizeCall> ParseTeiTokenizeRequest(std::string_view body,
                                                     const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  TokenizeCall call;
  ASSIGN_OR_RETURN(call.inputs, ReadTeiTexts(json, "inputs", limits));
  ASSIGN_OR_RETURN(std::optional<bool> special, OptionalBool(json, "add_special_tokens"));
  call.add_special_tokens = special.value_or(true);
  return call;
}

std::string TeiEmbedBody(const EmbedAnswer& answer, TeiRoute route) {
  Json out = Json::array();
  const size_t hidden = static_cast<size_t>(answer.model->model->config().hidden_size);
  for (const DocumentResult& doc : answer.result.documents) {
    switch (route) {
      case TeiRoute::kEmbed:
        out.push_back(doc.vector);
        break;
      case TeiRoute::kEmbedSparse: {
        Json values = Json::array();
        for (size_t i = 0; i < doc.sparse.ids.size(); ++i)
          values.push_back({{"index", doc.sparse.ids[i]}, {"value", doc.sparse.weights[i]}});
        out.push_back(std::move(values));
        break;
      }
      case TeiRoute::kEmbedAll: {
        Json rows = Json::array();
        for (size_t r = 0; r * hidden < doc.token_states.size(); ++r) {
          rows.push_back(std::vector<float>(doc.token_states.begin() + r * hidden,
                                            doc.token_states.begin() + (r + 1) * hidden));
        }
        out.push_back(std::move(rows));
        break;
      }
    }
  }
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string TeiTokenizeBody(const TokenizeAnswer& answer) {
  const model_store::Model& model = *answer.model->model;
  Json out = Json::array();
  for (size_t i = 0; i < answer.tokens.size(); ++i) {
    Json tokens = Json::array();
    auto special = [&](int32_t id) {
      tokens.push_back({{"id", id},
                        {"text", model.tokenizer().IdToToken(id)},
                        {"special", true},
                        {"start", nullptr},
                        {"stop", nullptr}});
    };
    if (answer.add_special_tokens)
      for (int32_t id : model.special_prefix()) special(id);
    const std::string& text = answer.inputs[i];
    const model_store::TokenizedText& t = answer.tokens[i];
    for (size_t k = 0; k < t.ids.size(); ++k) {
      // As TEI: the input's bytes the token covers, and their byte offsets.
      tokens.push_back({{"id", t.ids[k]},
                        {"text", text.substr(t.spans[k].begin, t.spans[k].size())},
                        {"special", false},
                        {"start", t.spans[k].begin},
                        {"stop", t.spans[k].end}});
    }
    if (answer.add_special_tokens)
      for (int32_t id : model.special_suffix()) special(id);
    out.push_back(std::move(tokens));
  }
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// TEI's model_type: {"embedding": {pooling}}, or {"reranker" | "classifier": {id2label,
// label2id}}.
Json TeiModelType(const model_store::Model& model) {
  const model_store::ClassifierConfig& head = model.config().classifier;
  if (head.kind == model_store::ModelKind::kEmbedding)
    return {{"embedding", {{"pooling", model_store::PoolingModeName(model.pooling())}}}};
  Json id2label = Json::object(), label2id = Json::object();
  for (size_t i = 0; i < head.labels.size(); ++i) {
    id2label[std::to_string(i)] = head.labels[i];
    label2id[head.labels[i]] = i;
  }
  return {{model_store::ModelKindName(head.kind),
           {{"id2label", std::move(id2label)}, {"label2id", std::move(label2id)}}}};
}

}  // namespace

std::string TeiInfoBody(const ServedModel& served, const RequestLimits& limits,
                        const TeiServerInfo& server) {
  const model_store::Model& model = *served.model;
  static const std::map<model_store::ComputeDType, const char*> kDtypes = {
      {model_store::ComputeDType::kFloat32, "float32"},
      {model_store::ComputeDType::kBFloat16, "bfloat16"},
      {model_store::ComputeDType::kFloat16, "float16"},
      {model_store::ComputeDType::kInt8, "int8"}};
  auto dtype = kDtypes.find(model.encoder().dtype());
  Json info = {
      {"model_id", served.hub ? served.hub->repository : served.name},
      {"model_sha", served.hub ? served.hub->commit : served.version},
      {"model_dtype", dtype != kDtypes.end() ? dtype->second : "float32"},
      {"device", model_store::ComputeDeviceName(model.encoder().device())},
      {"model_type", TeiModelType(model)},
      {"max_concurrent_requests", limits.max_concurrent_requests},
      {"max_input_length", model.max_input_length()},
      {"max_batch_tokens", served.batcher->options().max_batch_tokens},
      {"max_batch_requests", server.max_batch_requests},
      {"max_client_batch_size", limits.max_inputs_per_request},
      {"auto_truncate", false},
      {"tokenization_workers", server.tokenization_workers},
      {"version", EMBEDDING_VERSION},  // the CMake project version
      {"sha", nullptr},
      {"docker_label", nullptr}};
  return info.dump();
}

int TeiHttpStatus(const absl::Status& status, bool body_error) {
  if (status.code() == absl::StatusCode::kInvalidArgument) return body_error ? 422 : 413;
  const int http = HttpStatusOf(status);  // 401, 404, 429, 503 and 504 as there
  return http == 500 ? 424 : http;        // TEI's "Backend" failure
}

std::string TeiErrorBody(const absl::Status& status) {
  const char* type = "Backend";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnauthenticated:
      type = "Validation";
      break;
    case absl::StatusCode::kResourceExhausted:
      type = "Overloaded";
      break;
    case absl::StatusCode::kUnavailable:
      type = "Unhealthy";
      break;
    default:
      break;
  }
  std::string message(status.message());
  if (status.GetPayload(kPastWindowPayload).has_value())
    absl::StrAppend(&message, " (send \"truncate\": true for long text)");
  return Json({{"error", message}, {"error_type", type}})
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace embedding::server
