#include "server/http/cohere_embed_api.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/name_table.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/vector_encoding.h"
#include "server/http/embed_options_json.h"
#include "server/http/json_body.h"
#include "server/http/openai_api.h"
#include "server/observability/request_log.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

enum class EmbeddingType { kFloat, kInt8, kUint8, kBinary, kUbinary, kBase64 };
constexpr NamedValue<EmbeddingType> kEmbeddingTypes[] = {
    {EmbeddingType::kFloat, "float"},     {EmbeddingType::kInt8, "int8"},
    {EmbeddingType::kUint8, "uint8"},     {EmbeddingType::kBinary, "binary"},
    {EmbeddingType::kUbinary, "ubinary"}, {EmbeddingType::kBase64, "base64"},
};

// Cohere's truncate: NONE refuses a text past the window, START drops its start, END its end.
enum class Truncate { kNone, kStart, kEnd };
constexpr NamedValue<Truncate> kTruncateNames[] = {
    {Truncate::kNone, "NONE"}, {Truncate::kStart, "START"}, {Truncate::kEnd, "END"}};

struct CohereEmbedRequest {
  EmbedCall call;
  std::vector<EmbeddingType> types;
  std::optional<Truncate> truncate;
  bool texts_sent = false;
  bool inputs_sent = false;  // as `inputs`, so refusals name inputs[i]
  std::vector<std::string> ignored_fields;
};

absl::Status Invalid(absl::string_view param, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(param, ": ", reason));
}

// `texts` or `inputs` past --max-inputs-per-request, checked before anything is copied.
absl::Status CheckCount(const Json& array, const char* field, const RequestLimits& limits) {
  if (array.size() <= static_cast<size_t>(limits.max_inputs_per_request)) return absl::OkStatus();
  return Invalid(field, absl::StrCat(array.size(), " ", field, "; allowed [1, ",
                                     limits.max_inputs_per_request,
                                     "] (--max-inputs-per-request)"));
}

// `texts`: strings.
absl::Status ReadTexts(const Json& value, const RequestLimits& limits, TextInputs* texts) {
  if (!value.is_array()) return Invalid("texts", "must be an array of strings");
  RETURN_IF_ERROR(CheckCount(value, "texts", limits));
  texts->reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string param = absl::StrCat("texts[", i, "]");
    ASSIGN_OR_RETURN(std::string text, ReadJsonString(value[i], param.c_str()));
    texts->push_back(std::move(text));
  }
  return absl::OkStatus();
}

// `inputs`: [{content: [{type: "text", text}]}], one text component each.
absl::Status ReadInputs(const Json& value, const RequestLimits& limits, TextInputs* texts) {
  if (!value.is_array()) return Invalid("inputs", "must be an array of {content} objects");
  RETURN_IF_ERROR(CheckCount(value, "inputs", limits));
  texts->reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string param = absl::StrCat("inputs[", i, "].content");
    const Json& input = value[i];
    if (!input.is_object() || !input.contains("content") || !input["content"].is_array() ||
        input["content"].size() != 1 || !input["content"][0].is_object()) {
      return Invalid(param, "must hold exactly one {type: \"text\", text} component");
    }
    const Json& part = input["content"][0];
    if (part.value("type", "") != "text" || !part.contains("text")) {
      return Invalid(absl::StrCat(param, "[0]"),
                     "must be {type: \"text\", text}; this server embeds text, not images");
    }
    ASSIGN_OR_RETURN(std::string text,
                     ReadJsonString(part["text"], absl::StrCat(param, "[0].text").c_str()));
    texts->push_back(std::move(text));
  }
  return absl::OkStatus();
}

absl::Status ReadEmbeddingTypes(const Json& value, std::vector<EmbeddingType>* types) {
  const std::string allowed = JoinedNames(kEmbeddingTypes);
  if (!value.is_array() || value.empty() || value.size() > std::size(kEmbeddingTypes))
    return Invalid("embedding_types", absl::StrCat("must be an array of 1 to 6 of ", allowed));
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string param = absl::StrCat("embedding_types[", i, "]");
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value[i], param.c_str()));
    const std::optional<EmbeddingType> type = ValueNamed(kEmbeddingTypes, name);
    if (!type.has_value()) {
      return Invalid(param, absl::StrCat("'", name.substr(0, 32), "' is not an embedding type; ",
                                         "allowed ", allowed));
    }
    if (std::find(types->begin(), types->end(), *type) != types->end())
      return Invalid(param, absl::StrCat(name, " is asked for twice; each type at most once"));
    types->push_back(*type);
  }
  return absl::OkStatus();
}

absl::Status ReadField(const std::string& key, const Json& value, const RequestLimits& limits,
                       CohereEmbedRequest* out) {
  EmbedRequestOptions& options = out->call.options;
  if (key == "texts" || key == "inputs") {
    if (out->texts_sent) return Invalid("texts", "send either texts or inputs, not both");
    out->texts_sent = true;
    out->inputs_sent = key == "inputs";
    TextInputs& texts = out->call.inputs.emplace<TextInputs>();
    return key == "texts" ? ReadTexts(value, limits, &texts) : ReadInputs(value, limits, &texts);
  }
  if (key == "images") return Invalid("images", "this server embeds text; send texts");
  if (key == "input_type" && value == "image")
    return Invalid("input_type", "'image' embeds images; this server embeds text");
  if (key == "truncation_side")
    return Invalid(key, "Cohere's truncate says which end is dropped (START or END)");
  bool taken = false;
  RETURN_IF_ERROR(ReadEmbedOption(key, value, &options, &taken));
  if (taken) return absl::OkStatus();
  if (key == "model") {
    ASSIGN_OR_RETURN(options.model, ReadJsonString(value, "model"));
  } else if (key == "embedding_types") {
    return ReadEmbeddingTypes(value, &out->types);
  } else if (key == "truncate") {
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "truncate"));
    out->truncate = ValueNamed(kTruncateNames, name);
    if (!out->truncate.has_value()) {
      return Invalid("truncate", absl::StrCat("'", name.substr(0, 32), "' is not allowed; allowed ",
                                              JoinedNames(kTruncateNames)));
    }
  } else if (key == "max_tokens") {
    ASSIGN_OR_RETURN(options.max_tokens, ReadJsonCount(value, "max_tokens"));
  } else if (key == "output_dimension") {
    ASSIGN_OR_RETURN(options.dimensions, ReadJsonCount(value, "output_dimension"));
  } else if (key == "priority") {  // no priorities here: accepted, counted as ignored
    if (!value.is_number_integer()) return Invalid("priority", "must be an integer");
    out->ignored_fields.push_back("priority");
  } else {
    return Invalid(key.size() > 64 ? key.substr(0, 64) + "..." : key,
                   absl::StrCat("unknown field; allowed: model, texts, inputs, input_type, "
                                "embedding_types, truncate, max_tokens, output_dimension, "
                                "priority, ",
                                EmbedOptionNames()));
  }
  return absl::OkStatus();
}

// truncate (default END) onto the core's strategy: NONE is REJECT, START and END are TRUNCATE
// keeping the end or the start. A chunking strategy sent as an extension handles long text
// itself, so truncate is refused beside it.
absl::Status ApplyTruncate(CohereEmbedRequest* request) {
  EmbedRequestOptions& options = request->call.options;
  const Truncate truncate = request->truncate.value_or(Truncate::kEnd);
  const Strategy implied = truncate == Truncate::kNone ? Strategy::kReject : Strategy::kTruncate;
  if (options.strategy.has_value() && *options.strategy != implied) {
    if (!request->truncate.has_value()) return absl::OkStatus();
    return Invalid("truncate", absl::StrCat(NameOf(kTruncateNames, truncate), " contradicts strategy ",
                                            StrategyName(*options.strategy),
                                            "; send one of them"));
  }
  options.strategy = implied;
  options.truncation_side =
      truncate == Truncate::kStart ? TruncationSide::kKeepEnd : TruncationSide::kKeepStart;
  return absl::OkStatus();
}

std::string CohereOutputName(Output output) {
  return output == Output::kDense ? "float" : OutputName(output);
}

Json EmbeddingsOfType(EmbeddingType type, const std::vector<DocumentResult>& documents,
                      std::vector<float>* scales) {
  Json rows = Json::array();
  for (const DocumentResult& doc : documents) {
    const std::vector<float>& v = doc.vector;
    switch (type) {
      case EmbeddingType::kFloat:
        rows.push_back(v);
        break;
      case EmbeddingType::kBase64: {
        std::string bytes(v.size() * sizeof(float), '\0');  // little-endian on this CPU
        if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
        rows.push_back(absl::Base64Escape(bytes));
        break;
      }
      case EmbeddingType::kInt8:
      case EmbeddingType::kUint8: {
        std::vector<float> scale;
        const std::string bytes = EncodeInt8(v, v.size(), &scale);
        if (scales->size() < documents.size()) scales->push_back(scale.empty() ? 0 : scale[0]);
        Json row = Json::array();
        const int offset = type == EmbeddingType::kUint8 ? 128 : 0;
        for (char b : bytes) row.push_back(static_cast<int8_t>(b) + offset);
        rows.push_back(std::move(row));
        break;
      }
      case EmbeddingType::kBinary:
      case EmbeddingType::kUbinary: {
        const int offset = type == EmbeddingType::kBinary ? -128 : 0;
        Json row = Json::array();
        for (char b : EncodeBinary(v, v.size())) row.push_back(static_cast<uint8_t>(b) + offset);
        rows.push_back(std::move(row));
        break;
      }
    }
  }
  return rows;
}

std::string CohereEmbedBody(const EmbedAnswer& answer, const std::vector<EmbeddingType>& types,
                            const std::vector<std::string>& texts,
                            std::optional<InputType> input_type) {
  const std::vector<DocumentResult>& documents = answer.result.documents;
  Json embeddings = Json::object();
  std::vector<float> scales;
  for (EmbeddingType type : types)
    embeddings[NameOf(kEmbeddingTypes, type)] = EmbeddingsOfType(type, documents, &scales);
  Json meta = {{"api_version", {{"version", "2"}}},
               {"billed_units", {{"input_tokens", answer.result.tokens}}}};
  if (input_type.has_value() && answer.params.input_type_match.empty() &&
      answer.model->model->late_interaction() == nullptr) {
    meta["warnings"] = Json::array(
        {absl::StrCat("input_type: the model has no prompt or task for ",
                      InputTypeName(*input_type), "; the texts were embedded as they are")});
  }
  Json body = {{"id", AcceptRequestId("")},
               {"embeddings", std::move(embeddings)},
               {"texts", texts},
               {"meta", std::move(meta)},
               {"response_type", "embeddings_by_type"}};
  if (!scales.empty()) body["scales"] = scales;  // int8's and uint8's step per vector
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<ParsedEmbed> ParseCohereEmbed(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  CohereEmbedRequest request;
  for (const auto& [key, value] : json.items()) {
    RETURN_IF_ERROR(ReadField(key, value, limits, &request));
  }
  if (!request.texts_sent) return Invalid("texts", "is required (or inputs)");
  RETURN_IF_ERROR(ApplyTruncate(&request));
  if (request.types.empty()) request.types = {EmbeddingType::kFloat};
  EmbedCall& call = request.call;
  call.options.outputs = {Output::kDense};
  call.inputs_field = request.inputs_sent ? "inputs" : "texts";
  call.outputs_field = "embedding_types";
  call.dimensions_field = "output_dimension";
  call.output_spelling = CohereOutputName;
  std::vector<std::string> texts = std::get<TextInputs>(call.inputs);  // echoed in the answer
  const std::optional<InputType> input_type = call.options.input_type;
  ParsedEmbed parsed{std::move(call),
                     [types = std::move(request.types), texts = std::move(texts),
                      input_type](const EmbedAnswer& answer) {
                       return CohereEmbedBody(answer, types, texts, input_type);
                     },
                     std::move(request.ignored_fields)};
  return parsed;
}

std::string CohereErrorBody(const absl::Status& status) {
  return ErrorObjectBody(status, /*openai_input=*/false);
}

}  // namespace embedding::server
