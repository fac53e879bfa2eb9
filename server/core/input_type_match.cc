#include "server/core/input_type_match.h"

#include <vector>

#include "absl/strings/match.h"

namespace embedding::server {
namespace {

std::vector<const char*> NamesFor(InputType type) {
  switch (type) {
    case InputType::kSearchQuery:
      return {"search_query", "query", "retrieval.query", "retrieval-query"};
    case InputType::kSearchDocument:
      return {"search_document", "document", "passage", "retrieval.passage",
              "retrieval-document"};
    case InputType::kClassification:
      return {"classification"};
    case InputType::kClustering:
      break;
  }
  return {"clustering", "separation"};
}

// The entry of `names` equal to `wanted` but for letter case, or null.
template <typename Names, typename Key>
const std::string* FindName(const Names& names, Key key, const char* wanted) {
  for (const auto& entry : names) {
    if (absl::EqualsIgnoreCase(key(entry), wanted)) return &key(entry);
  }
  return nullptr;
}

}  // namespace

InputTypeMatch MatchInputType(InputType type, const model_store::Model& model) {
  InputTypeMatch match;
  if (model.late_interaction() != nullptr) {
    match.role = type == InputType::kSearchQuery ? model_store::InputRole::kQuery
                                                 : model_store::InputRole::kDocument;
  }
  const std::vector<std::string>& tasks = model.config().adapters;
  const auto& prompts = model.sentence_transformers().prompts;
  for (const char* name : NamesFor(type)) {
    if (const std::string* task =
            FindName(tasks, [](const std::string& t) -> const std::string& { return t; }, name)) {
      match.task = *task;
      return match;
    }
    if (const std::string* prompt = FindName(
            prompts, [](const auto& entry) -> const std::string& { return entry.first; }, name)) {
      match.prompt_name = *prompt;
      return match;
    }
  }
  return match;
}

}  // namespace embedding::server
