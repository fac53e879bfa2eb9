#include "server/http/score_options_json.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/http/embed_options_json.h"
#include "server/http/json_body.h"

namespace embedding::server {

absl::Status ReadScoreOption(const std::string& key, const nlohmann::json& value,
                             ScoreOptions* options, bool* taken) {
  RETURN_IF_ERROR(ReadLongTextOption(key, value, options, taken));
  if (*taken) return absl::OkStatus();
  *taken = true;
  if (key == "raw_scores") {
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
