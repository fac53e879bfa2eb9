#include "server/http/tei_scoring_api.h"

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/model_catalog.h"
#include "server/http/json_body.h"
#include "server/http/score_options_json.h"
#include "server/http/tei_api.h"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", reason));
}

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

// TEI's truncate and truncation_direction, then every score option the body carries; the
// keys that are neither these nor in `route_fields` (the route's own) go to `*ignored`.
absl::StatusOr<ScoreOptions> ReadOptions(const Json& body,
                                         std::initializer_list<const char*> route_fields,
                                         std::vector<std::string>* ignored) {
  ScoreOptions options;
  ASSIGN_OR_RETURN(TeiTruncation truncation, ReadTeiTruncation(body));
  if (truncation.truncate.value_or(false)) options.strategy = Strategy::kTruncate;
  options.truncation_side = truncation.side;
  for (const auto& [key, value] : body.items()) {
    bool taken = key == "truncate" || key == "truncation_direction";
    for (const char* field : route_fields) taken = taken || key == field;
    if (!taken) RETURN_IF_ERROR(ReadScoreOption(key, value, &options, &taken));
    if (!taken) ignored->push_back(key);
  }
  return options;
}

// One prediction: every label with its score, by descending score (ties in label order).
Json Predictions(const ScoredInput& input, const std::vector<std::string>& labels) {
  std::vector<size_t> order(input.scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return input.scores[a] > input.scores[b]; });
  Json out = Json::array();
  for (size_t l : order)
    out.push_back({{"score", input.scores[l]}, {"label", l < labels.size() ? labels[l] : ""}});
  return out;
}

}  // namespace

absl::StatusOr<ParsedScore> ParseTeiRerank(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  RerankCall call;
  auto query = json.find("query");
  if (query == json.end() || !query->is_string()) return Invalid("query", "must be a string");
  call.query = query->get<std::string>();
  ASSIGN_OR_RETURN(call.documents, ReadTeiTexts(json, "texts", limits));
  std::vector<std::string> ignored;
  ASSIGN_OR_RETURN(call.options, ReadOptions(json, {"query", "texts", "return_text"}, &ignored));
  bool return_text = false;
  if (auto it = json.find("return_text"); it != json.end() && !it->is_null()) {
    ASSIGN_OR_RETURN(return_text, ReadJsonBool(*it, "return_text"));
  }
  auto texts =
      return_text ? std::make_shared<const TextInputs>(call.documents) : nullptr;
  return ParsedScore{std::move(call), [texts](const ScoreAnswer& answer) {
                       Json out = Json::array();
                       for (const ScoredInput& input : answer.results) {
                         Json result = {{"index", input.index}, {"score", input.scores.at(0)}};
                         if (texts != nullptr) result["text"] = (*texts)[input.index];
                         out.push_back(std::move(result));
                       }
                       return Dump(out);
                     },
                     std::move(ignored)};
}

absl::StatusOr<ParsedScore> ParseTeiPredict(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  auto inputs = json.find("inputs");
  if (inputs == json.end()) return Invalid("inputs", "is required");
  // As TEI reads it: a string, or two strings (one pair), is one input; otherwise a batch
  // whose items are strings or [first, second] pairs, all of one kind here.
  auto is_pair = [](const Json& v) {
    return v.is_array() && v.size() == 2 && v[0].is_string() && v[1].is_string();
  };
  const bool single = inputs->is_string() || is_pair(*inputs);
  const Json items = single ? Json::array({*inputs}) : *inputs;
  if (!items.is_array() || items.empty())
    return Invalid("inputs", "must be a text, a [first, second] pair, or a non-empty list of them");
  if (items.size() > limits.max_inputs_per_request) {
    return Invalid("inputs", absl::StrCat(items.size(), " inputs; allowed [1, ",
                                          limits.max_inputs_per_request,
                                          "] (--max-inputs-per-request)"));
  }
  ClassifyCall call;
  const bool pairs = is_pair(items[0]);
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& item = items[i];
    if (pairs ? !is_pair(item) : !item.is_string()) {
      return Invalid(absl::StrCat("inputs[", i, "]"),
                     pairs ? "must be a [first, second] pair like inputs[0]"
                           : "must be a text like inputs[0] (one kind per request)");
    }
    if (pairs) {
      call.pair_firsts.push_back(item[0].get<std::string>());
      call.inputs.push_back(item[1].get<std::string>());
    } else {
      call.inputs.push_back(item.get<std::string>());
    }
  }
  std::vector<std::string> ignored;
  ASSIGN_OR_RETURN(call.options, ReadOptions(json, {"inputs"}, &ignored));
  return ParsedScore{std::move(call), [single](const ScoreAnswer& answer) {
                       const auto& labels = answer.model->model->config().classifier.labels;
                       if (single) return Dump(Predictions(answer.results.at(0), labels));
                       Json out = Json::array();
                       for (const ScoredInput& input : answer.results)
                         out.push_back(Predictions(input, labels));
                       return Dump(out);
                     },
                     std::move(ignored)};
}

absl::StatusOr<ParsedEmbed> ParseTeiSimilarity(std::string_view body, const RequestLimits& limits) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(body, limits));
  auto inputs = json.find("inputs");
  if (inputs == json.end() || !inputs->is_object())
    return Invalid("inputs", "must be an object {source_sentence, sentences}");
  auto source = inputs->find("source_sentence");
  if (source == inputs->end() || !source->is_string())
    return Invalid("inputs.source_sentence", "must be a string");
  ASSIGN_OR_RETURN(TextInputs sentences, ReadTeiTexts(*inputs, "sentences", limits));
  if (sentences.size() + 1 > limits.max_inputs_per_request) {
    return Invalid("inputs.sentences",
                   absl::StrCat(sentences.size(), " sentences and the source; allowed [1, ",
                                limits.max_inputs_per_request - 1, "] (--max-inputs-per-request)"));
  }
  EmbedCall call;
  TextInputs texts = {source->get<std::string>()};
  texts.insert(texts.end(), std::make_move_iterator(sentences.begin()),
               std::make_move_iterator(sentences.end()));
  call.inputs = std::move(texts);
  ASSIGN_OR_RETURN(TeiTruncation truncation, ReadTeiTruncation(json));
  call.options.strategy =
      truncation.truncate.value_or(false) ? Strategy::kTruncate : Strategy::kReject;
  call.options.truncation_side = truncation.side;
  call.options.normalize = true;  // the answer is each sentence's cosine to the source
  std::vector<std::string> ignored;
  for (const auto& [key, value] : json.items()) {
    if (key == "prompt_name") {
      if (!value.is_null()) {
        ASSIGN_OR_RETURN(call.options.prompt_name, ReadJsonString(value, "prompt_name"));
      }
      continue;
    }
    if (key == "inputs" || key == "truncate" || key == "truncation_direction") continue;
    ASSIGN_OR_RETURN(bool extension, ReadTeiExtension(key, value, &call.options));
    if (!extension) ignored.push_back(key);
  }
  return ParsedEmbed{std::move(call), [](const EmbedAnswer& answer) {
                       const auto& docs = answer.result.documents;
                       Json out = Json::array();
                       for (size_t i = 1; i < docs.size(); ++i) {
                         double dot = 0;
                         for (size_t d = 0; d < docs[0].vector.size(); ++d)
                           dot += static_cast<double>(docs[0].vector[d]) * docs[i].vector[d];
                         out.push_back(static_cast<float>(dot));
                       }
                       return Dump(out);
                     },
                     std::move(ignored)};
}

}  // namespace embedding::server
