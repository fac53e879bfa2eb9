#include "model_store/spec/score_prompt.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "model_store/spec/config_fields.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

using Json = nlohmann::json;

constexpr char kQuery[] = "{query}";
constexpr char kInstruction[] = "{instruction}";
constexpr char kDocument[] = "{document}";

size_t Occurrences(absl::string_view text, absl::string_view what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != absl::string_view::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

}  // namespace

bool ScorePrompt::takes_instruction() const {
  return query_template.find(kInstruction) != std::string::npos;
}

std::string ScorePrompt::FormatQuery(absl::string_view query, absl::string_view instruction) const {
  // StrReplaceAll scans the template once, so a query holding "{instruction}" stays text.
  const absl::string_view chosen =
      instruction.empty() ? absl::string_view(default_instruction) : instruction;
  return absl::StrReplaceAll(query_template, {{kQuery, query}, {kInstruction, chosen}});
}

ScorePrompt Qwen3RerankerPrompt() {
  // The recipe formats "<Document>: {doc}" as one text; its byte-level pre-tokenizer splits
  // after the colon, so the colon ends the query part and the space leads the document.
  ScorePrompt prompt;
  prompt.query_template =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
      "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
      "<|im_end|>\n<|im_start|>user\n<Instruct>: {instruction}\n<Query>: {query}\n<Document>:";
  prompt.document_lead = " ";
  prompt.suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  prompt.default_instruction =
      "Given a web search query, retrieve relevant passages that answer the query";
  return prompt;
}

absl::StatusOr<ScorePrompt> ReadScorePrompt(const std::string& label, const Json& config) {
  bool qwen3 = false;
  RETURN_IF_ERROR(ReadBool(label, config, "is_original_qwen3_reranker", &qwen3));
  const Json& given = config.value("score_prompt", Json());
  if (qwen3 && !given.is_null()) {
    return absl::DataLossError(absl::StrCat(
        label, ": score_prompt and is_original_qwen3_reranker name two prompts; give one"));
  }
  if (qwen3) return Qwen3RerankerPrompt();
  if (given.is_null()) return ScorePrompt();
  if (!given.is_object())
    return absl::DataLossError(absl::StrCat(label, ": field 'score_prompt' must be an object"));
  ScorePrompt prompt;
  std::string document;
  const std::string where = absl::StrCat(label, " score_prompt");
  RETURN_IF_ERROR(ReadString(where, given, "query_template", &prompt.query_template));
  RETURN_IF_ERROR(ReadString(where, given, "document_template", &document));
  RETURN_IF_ERROR(ReadString(where, given, "default_instruction", &prompt.default_instruction));
  if (Occurrences(prompt.query_template, kQuery) != 1 ||
      Occurrences(prompt.query_template, kInstruction) > 1) {
    return absl::DataLossError(absl::StrCat(
        where, ": field 'query_template' must hold {query} once and {instruction} at most once"));
  }
  if (Occurrences(document, kDocument) != 1) {
    return absl::DataLossError(
        absl::StrCat(where, ": field 'document_template' must hold {document} once"));
  }
  const size_t at = document.find(kDocument);
  prompt.document_lead = document.substr(0, at);
  prompt.suffix = document.substr(at + sizeof(kDocument) - 1);
  if (!prompt.takes_instruction()) prompt.default_instruction.clear();
  return prompt;
}

}  // namespace embedding::model_store
