// bge-m3's sparse and multi-vector outputs as JSON, shared by the HTTP doors:
//   sparse:       {"token_ids": [...], "weights": [...], "tokens": [...]}
//   multi_vector: {"count", "dimensions", "encoding": "float32" | "float16" | "int8" | "binary",
//                  "values": [...] (float32) or "data": base64 (float16 / int8 / binary),
//                  int8's "scales",
//                  "token_spans": [[start, end], ...]}
#pragma once

#include "model_store/text/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"

namespace embedding::server {

nlohmann::json SparseJson(const SparseResult& sparse, const model_store::Tokenizer& tokenizer);
nlohmann::json MultiVectorJson(const MultiVectorResult& vectors, VectorEncoding encoding);

// "float32", "float16", "int8", "binary" -> the encoding; INVALID_ARGUMENT naming
// multi_vector_encoding.
absl::StatusOr<VectorEncoding> ParseVectorEncoding(const std::string& name);
// "dense", "sparse", "multi_vector" (the core's OutputName) -> the output; INVALID_ARGUMENT
// naming `field`.
absl::StatusOr<Output> ParseOutputName(const std::string& name, const std::string& field);
// "query", "document" -> a late-interaction model's input role; INVALID_ARGUMENT naming
// input_role.
absl::StatusOr<model_store::InputRole> ParseInputRole(const std::string& name);

}  // namespace embedding::server
