#include "server/http/score_options_json.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/http/embed_options_json.h"
#include "server/http/json_body.h"

namespace embedding::server {

absl::Status ReadScoreOption(const std::string& key, const nlohmann::json& value,
                             ScoreOptions* options, bool* taken) {
  *taken = true;
  if (key == "temperature" || key == "temperature_mode") {
    return ReadTemperatureField(key, value, &options->temperature, &options->temperature_mode)
        .status();
  } else if (key == "strategy") {
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "strategy"));
    ASSIGN_OR_RETURN(options->strategy, ParseStrategyName(name, "strategy"));
  } else if (key == "truncation_side") {
    ASSIGN_OR_RETURN(options->truncation_side, ReadTruncationSide(value));
  } else if (key == "chunk_tokens") {
    ASSIGN_OR_RETURN(options->chunk_tokens, ReadJsonCount(value, "chunk_tokens"));
  } else if (key == "chunk_overlap_tokens") {
    ASSIGN_OR_RETURN(options->chunk_overlap_tokens, ReadJsonCount(value, "chunk_overlap_tokens"));
  } else if (key == "raw_scores") {
    ASSIGN_OR_RETURN(options->raw_scores, ReadJsonBool(value, "raw_scores"));
  } else if (key == "return_chunks") {
    ASSIGN_OR_RETURN(options->return_chunks, ReadJsonBool(value, "return_chunks"));
  } else if (key == "instruction") {
    ASSIGN_OR_RETURN(options->instruction, ReadJsonString(value, "instruction"));
  } else {
    *taken = false;
  }
  return absl::OkStatus();
}

const char* ScoreOptionNames() {
  return "temperature, temperature_mode, strategy, truncation_side, chunk_tokens, "
         "chunk_overlap_tokens, raw_scores, return_chunks, instruction";
}

}  // namespace embedding::server
