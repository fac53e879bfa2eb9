#include "model_store/spec/classifier_head.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/config_fields.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

using Json = nlohmann::json;

constexpr char kSequenceClassification[] = "ForSequenceClassification";
// Classifiers on the Hub have a few labels to a few thousand; a head wider than this is a
// damaged config, refused before its weights are sized from it.
constexpr int64_t kMaxLabels = 100000;

// id2label ({"0": "LABEL_0", ...}) by index; num_labels where it is absent, else
// transformers' default of 2.
absl::StatusOr<std::vector<std::string>> ReadLabels(const std::string& label, const Json& config) {
  const Json& id2label = config.value("id2label", Json());
  std::vector<std::string> labels;
  if (id2label.is_object() && !id2label.empty()) {
    if (static_cast<int64_t>(id2label.size()) > kMaxLabels)
      return absl::DataLossError(absl::StrCat(label, ": id2label has more than ", kMaxLabels,
                                              " labels"));
    labels.resize(id2label.size());
    for (const auto& [key, name] : id2label.items()) {
      int index = -1;
      if (!absl::SimpleAtoi(key, &index) || index < 0 ||
          index >= static_cast<int>(labels.size()) || !name.is_string() ||
          !labels[index].empty()) {
        return absl::DataLossError(absl::StrCat(label, ": id2label must map each of 0..",
                                                labels.size() - 1, " to a name once; got '", key,
                                                "': ", name.dump()));
      }
      labels[index] = name.get<std::string>();
    }
    return labels;
  }
  int64_t count = 2;
  RETURN_IF_ERROR(ReadPositive(label, config, "num_labels", /*required=*/false, &count));
  if (count > kMaxLabels)
    return absl::DataLossError(absl::StrCat(label, ": num_labels ", count, " above ", kMaxLabels));
  for (int64_t i = 0; i < count; ++i) labels.push_back(absl::StrCat("LABEL_", i));
  return labels;
}

absl::StatusOr<ScoreFunction> ReadScoreFunction(const std::string& label, const Json& config,
                                                size_t labels) {
  const Json& st = config.value("sentence_transformers", Json::object());
  std::string activation;
  if (st.is_object()) RETURN_IF_ERROR(ReadString(label, st, "activation_fn", &activation));
  if (absl::EndsWith(activation, ".Identity")) return ScoreFunction::kIdentity;
  if (absl::EndsWith(activation, ".Sigmoid")) return ScoreFunction::kSigmoid;
  const Json& problem = config.value("problem_type", Json());
  if (problem.is_null() || problem == "single_label_classification" || problem == "regression")
    return labels == 1 ? ScoreFunction::kSigmoid : ScoreFunction::kSoftmax;
  if (problem == "multi_label_classification") return ScoreFunction::kSigmoid;
  return absl::DataLossError(absl::StrCat(label, ": problem_type ", problem.dump(),
                                          " is not single_label_classification, "
                                          "multi_label_classification or regression"));
}

absl::StatusOr<std::vector<std::string>> ReadFromTokens(const std::string& label,
                                                        const Json& tokens,
                                                        const std::string& family,
                                                        const ClassifierHeadSpec& head) {
  if (head.lm_head.empty()) {
    std::vector<std::string> with_lm_heads;
    for (const ArchitectureSpec& spec : AllArchitectures()) {
      if (!spec.classifier.lm_head.empty()) with_lm_heads.push_back(spec.family);
    }
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": classifier_from_token: the ", family,
                     " family has no language-model head here; families with one: ",
                     absl::StrJoin(with_lm_heads, ", ")));
  }
  std::vector<std::string> out;
  if (tokens.is_array() && tokens.size() >= 2 &&
      static_cast<int64_t>(tokens.size()) <= kMaxLabels) {
    for (const Json& token : tokens) {
      if (!token.is_string() || token.get<std::string>().empty()) break;
      out.push_back(token.get<std::string>());
    }
  }
  if (out.size() < 2 || out.size() != tokens.size()) {
    return absl::DataLossError(
        absl::StrCat(label, ": field 'classifier_from_token' must list 2 to ", kMaxLabels,
                     " vocabulary tokens as strings; got ", tokens.dump().substr(0, 200)));
  }
  return out;
}

}  // namespace

const char* ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kReranker:
      return "reranker";
    case ModelKind::kClassifier:
      return "classifier";
    case ModelKind::kEmbedding:
      break;
  }
  return "embedding";
}

const char* ScoreFunctionName(ScoreFunction function) {
  switch (function) {
    case ScoreFunction::kSoftmax:
      return "softmax";
    case ScoreFunction::kIdentity:
      return "identity";
    case ScoreFunction::kSigmoid:
      break;
  }
  return "sigmoid";
}

absl::StatusOr<ClassifierConfig> ReadClassifierConfig(const std::string& label, const Json& config,
                                                      const std::string& family,
                                                      const ClassifierHeadSpec& head) {
  ClassifierConfig out;
  const Json& architectures = config.value("architectures", Json::array());
  if (!architectures.is_array() || architectures.empty() || !architectures[0].is_string())
    return out;  // no class named: an embedder, as every encoder checkpoint before heads
  out.architecture = architectures[0].get<std::string>();
  const Json& from_token = config.value("classifier_from_token", Json());
  ASSIGN_OR_RETURN(out.prompt, ReadScorePrompt(label, config));
  if (!absl::EndsWith(out.architecture, kSequenceClassification)) {
    if (from_token.is_null() && out.prompt.empty()) return out;
    return absl::InvalidArgumentError(absl::StrCat(
        label,
        ": classifier_from_token and a score prompt make a classifier, but architectures is '",
        out.architecture, "'; name the family's ", kSequenceClassification,
        " class there too (as vLLM's --hf_overrides does)"));
  }
  if (head.steps.empty()) {
    std::vector<std::string> with_heads;
    for (const ArchitectureSpec& spec : AllArchitectures()) {
      if (!spec.classifier.steps.empty()) with_heads.push_back(spec.family);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": architectures '", out.architecture, "': the ", family,
        " family has no sequence-classification head here; families with one: ",
        absl::StrJoin(with_heads, ", ")));
  }
  if (from_token.is_null()) {
    ASSIGN_OR_RETURN(out.labels, ReadLabels(label, config));
  } else {
    ASSIGN_OR_RETURN(out.from_tokens, ReadFromTokens(label, from_token, family, head));
    RETURN_IF_ERROR(ReadBool(label, config, "tie_word_embeddings", &out.lm_head_tied));
    // Two tokens: one label, the second's probability in a softmax over the pair.
    out.labels = out.from_tokens.size() == 2 ? std::vector<std::string>{out.from_tokens[1]}
                                             : out.from_tokens;
  }
  out.kind = out.labels.size() == 1 ? ModelKind::kReranker : ModelKind::kClassifier;
  ASSIGN_OR_RETURN(out.score, ReadScoreFunction(label, config, out.labels.size()));
  if (!head.pooling_field.empty()) {
    std::string pooling = "cls";
    RETURN_IF_ERROR(ReadString(label, config, head.pooling_field, &pooling));
    if (pooling != "cls" && pooling != "mean") {
      return absl::DataLossError(
          absl::StrCat(label, ": ", head.pooling_field, " '", pooling, "' is not cls or mean"));
    }
    out.mean_pooling = pooling == "mean";
  }
  out.last_token_pooling = head.last_token;
  if (!head.activation_field.empty()) {
    out.activation = "gelu";
    RETURN_IF_ERROR(ReadString(label, config, head.activation_field, &out.activation));
  }
  for (const ClassifierStep& step : head.steps) {
    bool bias = false;
    if (!step.bias_field.empty()) RETURN_IF_ERROR(ReadBool(label, config, step.bias_field, &bias));
    if (!step.bias_field.empty() && !bias) out.biases_absent.push_back(step.bias_field);
  }
  return out;
}

}  // namespace embedding::model_store
