#include "server/http/rerank_api.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/model_catalog.h"
#include "server/http/json_body.h"
#include "server/http/score_options_json.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", reason));
}

absl::StatusOr<TextInputs> ReadDocuments(const Json& body, const RequestLimits& limits) {
  auto it = body.find("documents");
  if (it == body.end() || !it->is_array() || it->empty())
    return Invalid("documents", "must be a non-empty list of texts or {\"text\": ...} objects");
  if (it->size() > limits.max_inputs_per_request) {
    return Invalid("documents", absl::StrCat(it->size(), " documents; allowed [1, ",
                                             limits.max_inputs_per_request,
                                             "] (--max-inputs-per-request)"));
  }
  TextInputs documents;
  documents.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    const Json* text = item.is_object() && item.contains("text") ? &item["text"] : &item;
    if (!text->is_string()) {
      return Invalid(absl::StrCat("documents[", i, "]"),
                     "must be a text or an object with a string \"text\"");
    }
    documents.push_back(text->get<std::string>());
  }
  return documents;
}

Json ChunkScores(const ScoredInput& input) {
  Json chunks = Json::array();
  for (const ChunkScore& chunk : input.chunks) {
    chunks.push_back({{"relevance_score", chunk.scores.at(0)},
                      {"tokens", {chunk.tokens.begin, chunk.tokens.end}},
                      {"chars", {chunk.chars.begin, chunk.chars.end}},
                      {"temperature", chunk.temperature}});
  }
  return chunks;
}

}  // namespace

absl::StatusOr<ParsedScore> ParseRerankRequest(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  RerankCall call;
  bool return_documents = true;
  auto query = json.find("query");
  if (query == json.end() || !query->is_string()) return Invalid("query", "must be a string");
  call.query = query->get<std::string>();
  ASSIGN_OR_RETURN(call.documents, ReadDocuments(json, limits));
  for (const auto& [key, value] : json.items()) {
    bool taken = false;
    RETURN_IF_ERROR(ReadScoreOption(key, value, &call.options, &taken));
    if (taken || value.is_null()) continue;
    if (key == "model") {
      ASSIGN_OR_RETURN(call.options.model, ReadJsonString(value, "model"));
    } else if (key == "top_n") {
      ASSIGN_OR_RETURN(uint32_t top_n, ReadJsonCount(value, "top_n"));
      if (top_n < 1) return Invalid("top_n", "must be at least 1");
      call.top_n = top_n;
    } else if (key == "return_documents") {
      ASSIGN_OR_RETURN(return_documents, ReadJsonBool(value, "return_documents"));
    }
  }
  auto texts =
      return_documents ? std::make_shared<const TextInputs>(call.documents) : nullptr;
  return ParsedScore{std::move(call), [texts](const ScoreAnswer& answer) {
                       Json results = Json::array();
                       for (const ScoredInput& input : answer.results) {
                         Json result = {{"index", input.index},
                                        {"relevance_score", input.scores.at(0)}};
                         if (texts != nullptr)
                           result["document"] = {{"text", (*texts)[input.index]}};
                         if (answer.params.traits.returns_chunks)
                           result["chunks"] = ChunkScores(input);
                         results.push_back(std::move(result));
                       }
                       const Json out = {
                           {"model", answer.model->name},
                           {"results", std::move(results)},
                           {"usage", {{"total_tokens", answer.usage.sequence_tokens}}},
                           {"meta", {{"billed_units", {{"search_units", 1}}}}}};
                       return out.dump(-1, ' ', false, Json::error_handler_t::replace);
                     }};
}

}  // namespace embedding::server
