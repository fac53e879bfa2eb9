#include "server/http/token_outputs_json.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/core/vector_encoding.h"

namespace embedding::server {

using Json = nlohmann::json;

Json SparseJson(const SparseResult& sparse, const model_store::Tokenizer& tokenizer) {
  Json tokens = Json::array();
  for (int32_t id : sparse.ids) tokens.push_back(tokenizer.IdToToken(id));
  return {{"token_ids", sparse.ids}, {"weights", sparse.weights}, {"tokens", std::move(tokens)}};
}

Json MultiVectorJson(const MultiVectorResult& vectors, VectorEncoding encoding) {
  Json spans = Json::array();
  for (const Span& s : vectors.token_spans) spans.push_back(Json::array({s.begin, s.end}));
  Json out = {{"count", vectors.count()}, {"dimensions", vectors.dim}, {"token_spans", spans}};
  switch (encoding) {
    case VectorEncoding::kFloat16:
      out["encoding"] = "float16";
      out["data"] = absl::Base64Escape(EncodeFloat16(vectors.values));
      break;
    case VectorEncoding::kInt8: {
      std::vector<float> scales;
      out["encoding"] = "int8";
      out["data"] = absl::Base64Escape(EncodeInt8(vectors.values, vectors.dim, &scales));
      out["scales"] = std::move(scales);
      break;
    }
    case VectorEncoding::kBinary:
      out["encoding"] = "binary";
      out["data"] = absl::Base64Escape(EncodeBinary(vectors.values, vectors.dim));
      break;
    case VectorEncoding::kFloat32:
      out["encoding"] = "float32";
      out["values"] = vectors.values;
  }
  return out;
}

absl::StatusOr<VectorEncoding> ParseVectorEncoding(const std::string& name) {
  if (name == "float32") return VectorEncoding::kFloat32;
  if (name == "float16") return VectorEncoding::kFloat16;
  if (name == "int8") return VectorEncoding::kInt8;
  if (name == "binary") return VectorEncoding::kBinary;
  return absl::InvalidArgumentError(
      "multi_vector_encoding: must be \"float32\", \"float16\", \"int8\" or \"binary\"");
}

absl::StatusOr<Output> ParseOutputName(const std::string& name, const std::string& field) {
  for (Output output : {Output::kDense, Output::kSparse, Output::kMultiVector})
    if (name == OutputName(output)) return output;
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": must be \"dense\", \"sparse\" or \"multi_vector\""));
}

absl::StatusOr<model_store::InputRole> ParseInputRole(const std::string& name) {
  if (name == "query") return model_store::InputRole::kQuery;
  if (name == "document") return model_store::InputRole::kDocument;
  return absl::InvalidArgumentError("input_role: must be \"query\" or \"document\"");
}

}  // namespace embedding::server
