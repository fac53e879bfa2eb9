// One Embed call as the core takes it from either door: what the caller asked (not yet checked
// against a model), its inputs as text or as token ids, and its deadline; and what the core
// answers. Plain structs: no protobuf message, no JSON, no transport.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/time/time.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"
#include "server/core/priority.h"
#include "server/core/vocabulary.h"

namespace embedding::server {

struct ServedModel;

// The request's options as sent, in the core's words (each door maps its own spelling and
// refuses what it cannot map). Unset optionals take the server's or the model's default.
struct EmbedRequestOptions {
  std::string model;  // "" for the default model; "name@version" for a loaded version
  std::optional<float> temperature;
  TemperatureMode temperature_mode = TemperatureMode::kFixed;
  std::optional<Strategy> strategy;  // unset: the server's --default_strategy
  TruncationSide truncation_side = TruncationSide::kKeepStart;
  std::optional<uint32_t> chunk_tokens;
  std::optional<uint32_t> chunk_overlap_tokens;
  // One window's content tokens at most (Cohere's max_tokens), with REJECT or TRUNCATE; past
  // the model's window, the window.
  std::optional<uint32_t> max_tokens;
  std::optional<bool> normalize;
  std::optional<uint32_t> dimensions;
  std::string prompt;       // prepended to every text input
  std::string prompt_name;  // one of the model's prompts, instead of `prompt`
  // One of the model's task adapters (jina-embeddings-v3's); "": prompt_name's, if it names one.
  std::string task;
  std::vector<Output> outputs;                          // empty: dense
  std::optional<VectorEncoding> multi_vector_encoding;  // unset: float32
  std::optional<uint32_t> max_vectors;
  std::optional<uint32_t> pool_factor;
  std::optional<uint32_t> sparse_top_k;
  // Every token's final hidden state, special tokens included (TEI's /embed_all); needs a
  // one-window strategy (REJECT or TRUNCATE).
  bool token_states = false;
  // Queries or documents, for a late-interaction (ColBERT) model, which encodes them
  // differently; unset: documents. Refused for other models.
  std::optional<model_store::InputRole> input_role;
  // What the texts are for; picks the model's prompt, task or role for it unless the request
  // names one itself.
  std::optional<InputType> input_type;
};

// Inputs are texts (tokenised by the model's tokenizer) or content token ids (checked against
// its vocabulary), never a mix.
using TextInputs = std::vector<std::string>;
using TokenInputs = std::vector<std::vector<int32_t>>;
using EmbedInputs = std::variant<TextInputs, TokenInputs>;

struct EmbedCall {
  EmbedRequestOptions options;
  // How refusals word what this call's door names otherwise (Cohere's texts, embedding_types
  // and output_dimension).
  const char* inputs_field = "inputs";
  OutputSpelling output_spelling = OutputName;
  const char* outputs_field = "outputs";
  const char* dimensions_field = "dimensions";
  EmbedInputs inputs;
  absl::Time deadline = absl::InfiniteFuture();
  // A Batch API line runs as background work.
  Priority priority = Priority::kInteractive;
};

// A finished call: the model version it ran on, the options it ran with, what it produced.
struct EmbedAnswer {
  std::shared_ptr<const ServedModel> model;
  EmbedParams params;
  EmbedResult result;
};

}  // namespace embedding::server
