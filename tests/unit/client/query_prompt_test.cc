// Which prompt calibrate and eval give queries: the one asked for, else the model's "query".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/embedctl/retrieval_task.h"

namespace embedding::client {
namespace {

v1::ModelInfo WithPrompts(std::vector<std::string> names) {
  v1::ModelInfo info;
  for (auto& name : names) info.add_prompt_names(name);
  return info;
}

TEST(QueryPromptName, DefaultsToTheModelsQueryPromptAndRefusesOneItLacks) {
  // Qwen3-Embedding's: the instruction under "query", documents under "document".
  EXPECT_EQ(QueryPromptName(WithPrompts({"document", "query"}), "").value(), "query");
  EXPECT_EQ(QueryPromptName(WithPrompts({"search_query", "search_document"}), "").value(), "");
  EXPECT_EQ(QueryPromptName(WithPrompts({}), "").value(), "");
  EXPECT_EQ(
      QueryPromptName(WithPrompts({"search_query", "search_document"}), "search_query").value(),
      "search_query");
  auto missing = QueryPromptName(WithPrompts({"passage", "query"}), "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(),
            "--prompt-name: 'nope' is not one of the model's prompts [passage, query]");
}

}  // namespace
}  // namespace embedding::client
