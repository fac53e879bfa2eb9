// The core's own words for what a caller chooses: strategies, outputs, multi-vector encodings,
// temperature modes, truncation sides, and the names the server's flags, metric labels and
// HTTP API spell them with. Each door maps its wire's spelling onto these (grpc_messages.cc,
// the HTTP doors' JSON parsers); nothing here knows a .proto.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace embedding::server {

// How a text longer than the model's window is handled (traits in strategy.h).
enum class Strategy {
  kReject,
  kTruncate,
  kChunkMean,
  kChunkWeightedMean,
  kChunkMax,
  kChunkAll,
  kLateChunking,
};

// What one forward pass can return for a document.
enum class Output { kDense, kSparse, kMultiVector };

// How multi-vectors travel: float32 values, IEEE half precision, or int8 with a scale per vector.
enum class VectorEncoding { kFloat32, kFloat16, kInt8, kBinary };

// FIXED: one tau for the request. AUTO: each sequence's tau from the model's schedule.
enum class TemperatureMode { kFixed, kAuto };

// Which window TRUNCATE keeps.
enum class TruncationSide { kKeepStart, kKeepEnd };

// What a caller's texts are for, in Cohere's input_type words; the core gives each the
// model's own prompt, task adapter or late-interaction role for it, where it has one
// (input_type_match.h).
enum class InputType { kSearchQuery, kSearchDocument, kClassification, kClustering };

// "chunk_mean" for kChunkMean: the one spelling of the server's --default_strategy, its metric
// labels and the HTTP API's "strategy".
std::string StrategyName(Strategy strategy);
// Every strategy, in the order the API lists them.
const std::vector<Strategy>& AllStrategies();
// The strategy spelled `name`; INVALID_ARGUMENT naming `field` and listing every name otherwise.
absl::StatusOr<Strategy> ParseStrategyName(absl::string_view name, absl::string_view field);

// "search_query", "search_document", "classification", "clustering".
std::string InputTypeName(InputType type);
// The input type spelled `name`; INVALID_ARGUMENT naming `field` and listing every name.
absl::StatusOr<InputType> ParseInputTypeName(absl::string_view name, absl::string_view field);

// "dense", "sparse", "multi_vector".
std::string OutputName(Output output);

// How the door that took a call spells an output in the core's refusals ("sparse" on HTTP,
// "EMBEDDING_OUTPUT_SPARSE" on gRPC), so each caller reads its own word.
using OutputSpelling = std::string (*)(Output);

}  // namespace embedding::server
