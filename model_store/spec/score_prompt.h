// A decoder reranker's prompt: the text a (query, document) pair is read inside, as
// Qwen3-Reranker's published recipe writes it. config.json (or --hf_overrides) names it:
// `"is_original_qwen3_reranker": true` for that recipe, or `score_prompt` for another.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace embedding::model_store {

struct ScorePrompt {
  // Everything before the document: holds "{query}" once and "{instruction}" at most once.
  std::string query_template;
  // The text the document is tokenised behind (" " for Qwen3-Reranker, so that the document's
  // first word is the " word" token it was trained on): it joins the document's first token,
  // so no chunk boundary falls between them. Whatever else is fixed before the document belongs
  // at the end of query_template, where it reaches every chunk.
  std::string document_lead;
  // After each chunk of the document, ending the prompt; tokenised once, at load.
  std::string suffix;
  // The instruction when a request gives none; empty without "{instruction}".
  std::string default_instruction;

  bool empty() const { return query_template.empty(); }
  bool takes_instruction() const;
  // query_template with `query` and the instruction (`instruction` unless empty, else the
  // default) in one pass: braces inside them are text, never placeholders.
  std::string FormatQuery(absl::string_view query, absl::string_view instruction) const;
};

// Qwen3-Reranker's system prompt, instruction, query and document, then the assistant's
// empty thinking block: the model answers "yes" or "no" next.
ScorePrompt Qwen3RerankerPrompt();

// The prompt `config` names: score_prompt {query_template, document_template (holding
// "{document}" once), default_instruction}, or is_original_qwen3_reranker; empty without
// either. DATA_LOSS naming `label` and the field for a malformed one.
absl::StatusOr<ScorePrompt> ReadScorePrompt(const std::string& label, const nlohmann::json& config);

}  // namespace embedding::model_store
