#include "server/http/embed_options_json.h"

#include "common/status_macros.h"
#include "server/http/json_body.h"

namespace embedding::server {

absl::StatusOr<TruncationSide> ReadTruncationSide(const nlohmann::json& value) {
  ASSIGN_OR_RETURN(std::string side, ReadJsonString(value, "truncation_side"));
  if (side != "start" && side != "end")
    return absl::InvalidArgumentError(
        "truncation_side: must be \"start\" (keep the start) or \"end\"");
  return side == "start" ? TruncationSide::kKeepStart : TruncationSide::kKeepEnd;
}

absl::Status ReadEmbedOption(const std::string& key, const nlohmann::json& value,
                             EmbedRequestOptions* options, bool* taken) {
  RETURN_IF_ERROR(ReadLongTextOption(key, value, options, taken));
  if (*taken) return absl::OkStatus();
  *taken = true;
  if (key == "normalize") {
    ASSIGN_OR_RETURN(options->normalize, ReadJsonBool(value, "normalize"));
  } else if (key == "prompt_name") {
    ASSIGN_OR_RETURN(options->prompt_name, ReadJsonString(value, "prompt_name"));
  } else if (key == "task") {  // Jina's embeddings API: the task adapter
    ASSIGN_OR_RETURN(options->task, ReadJsonString(value, "task"));
  } else if (key == "input_type") {  // Cohere's: the model's prompt, task or role for it
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "input_type"));
    ASSIGN_OR_RETURN(options->input_type, ParseInputTypeName(name, "input_type"));
  } else if (key == "prompt") {  // free text, e.g. a decoder's "Instruct: {task}\nQuery:"
    ASSIGN_OR_RETURN(options->prompt, ReadJsonString(value, "prompt"));
  } else {
    *taken = false;
  }
  return absl::OkStatus();
}

const char* EmbedOptionNames() {
  return "temperature, temperature_mode, strategy, truncation_side, chunk_tokens, "
         "chunk_overlap_tokens, normalize, prompt, prompt_name, task, input_type";
}

}  // namespace embedding::server
