#include "server/http/openai_response.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

Json Vector(const std::vector<float>& values, bool base64) {
  if (!base64) return Json(values);
  // OpenAI's base64 is the float32 array's bytes, little-endian (this CPU's order).
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

Json SpanOf(const Span& span) { return Json::array({span.begin, span.end}); }

Json Details(const DocumentResult& doc, bool base64) {
  Json details = {
      {"token_count", doc.token_count},     {"chunk_count", doc.chunk_count},
      {"truncated", doc.truncated},         {"temperature", doc.temperature},
      {"length_bucket", doc.length_bucket}, {"high_frequency_ratio", MeanHighFrequencyRatio(doc)}};
  if (!doc.chunks.empty()) {
    Json chunks = Json::array();
    for (const ChunkResult& chunk : doc.chunks) {
      chunks.push_back({{"embedding", Vector(chunk.vector, base64)},
                        {"token_span", SpanOf(chunk.tokens)},
                        {"char_span", SpanOf(chunk.chars)},
                        {"byte_span", SpanOf(chunk.bytes)}});
    }
    details["chunks"] = std::move(chunks);
  }
  return details;
}

// DATA_LOSS and UNKNOWN, which only a corrupt model or a bug produce, are reported as INTERNAL
// (as the gRPC door does).
absl::StatusCode ReportedCode(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  return code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kUnknown
             ? absl::StatusCode::kInternal
             : code;
}

const char* ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return "invalid_request_error";
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_error";
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return "server_unavailable";
    default:
      return "server_error";
  }
}

}  // namespace

std::string OpenAiEmbeddingsBody(const EmbedAnswer& answer, bool base64) {
  Json data = Json::array();
  const auto& documents = answer.result.documents;
  for (size_t i = 0; i < documents.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", Vector(documents[i].vector, base64)},
                    {"details", Details(documents[i], base64)}});
  }
  const uint64_t tokens = answer.result.tokens;
  Json body = {{"object", "list"},
               {"data", std::move(data)},
               {"model", answer.model->name},
               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string OpenAiModelsBody(const std::vector<std::shared_ptr<const ServedModel>>& models) {
  Json data = Json::array();
  for (const auto& model : models) {
    data.push_back({{"id", model->name},
                    {"object", "model"},
                    {"created", 0},  // unknown: checkpoints carry no creation time
                    {"owned_by", "embedding-server"},
                    {"version", model->version}});
  }
  return Json({{"object", "list"}, {"data", std::move(data)}}).dump();
}

int OpenAiHttpStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string OpenAiErrorBody(const absl::Status& status) {
  const std::string message(status.message());
  Json param = nullptr;
  // Messages name their field first: "temperature: ...", "inputs[2]: ...", "model: ...".
  const size_t colon = message.find(": ");
  if (colon != std::string::npos && colon <= 80 && message.find_first_of(" '\"", 0) >= colon) {
    std::string field = message.substr(0, colon);
    if (absl::StartsWith(field, "inputs")) field = "input" + field.substr(6);
    if (!absl::StartsWith(field, "--")) param = field;
  }
  Json error = {{"message", message},
                {"type", ErrorType(status.code())},
                {"param", param},
                {"code", absl::AsciiStrToLower(absl::StatusCodeToString(ReportedCode(status)))}};
  return Json({{"error", std::move(error)}}).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace embedding::server
