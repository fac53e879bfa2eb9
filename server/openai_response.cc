#include "server/openai_response.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace embedding::server {
namespace {

using Json = nlohmann::json;

Json Vector(const google::protobuf::RepeatedField<float>& values, bool base64) {
  if (!base64) return Json(std::vector<float>(values.begin(), values.end()));
  // OpenAI's base64 is the float32 array's bytes, little-endian (this CPU's order).
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

Json SpanOf(const v1::Span& span) { return Json::array({span.start(), span.end()}); }

Json Details(const v1::DocumentEmbedding& doc, bool base64) {
  Json details = {{"token_count", doc.token_count()},
                  {"chunk_count", doc.chunk_count()},
                  {"truncated", doc.truncated()},
                  {"temperature", doc.temperature()},
                  {"length_bucket", doc.length_bucket()},
                  {"high_frequency_ratio", doc.high_frequency_ratio()}};
  if (doc.chunks_size() > 0) {
    Json chunks = Json::array();
    for (const v1::ChunkEmbedding& chunk : doc.chunks()) {
      chunks.push_back({{"embedding", Vector(chunk.vector(), base64)},
                        {"token_span", SpanOf(chunk.token_span())},
                        {"char_span", SpanOf(chunk.char_span())},
                        {"byte_span", SpanOf(chunk.byte_span())}});
    }
    details["chunks"] = std::move(chunks);
  }
  return details;
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

std::string OpenAiEmbeddingsBody(const v1::EmbedResponse& response, bool base64) {
  Json data = Json::array();
  for (int i = 0; i < response.documents_size(); ++i) {
    const v1::DocumentEmbedding& doc = response.documents(i);
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", Vector(doc.vector(), base64)},
                    {"details", Details(doc, base64)}});
  }
  const uint64_t tokens = response.usage().tokens();
  Json body = {{"object", "list"},
               {"data", std::move(data)},
               {"model", response.model()},
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
  if (colon != std::string::npos && colon <= 80 &&
      message.find_first_of(" '\"", 0) >= colon) {
    std::string field = message.substr(0, colon);
    if (absl::StartsWith(field, "inputs")) field = "input" + field.substr(6);
    if (!absl::StartsWith(field, "--")) param = field;
  }
  Json error = {{"message", message},
                {"type", ErrorType(status.code())},
                {"param", param},
                {"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}};
  return Json({{"error", std::move(error)}}).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace embedding::server
