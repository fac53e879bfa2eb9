#include "client/embedctl/score_commands.h"

#include <iostream>

#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

using Json = nlohmann::json;

int Fail(const absl::Status& status) {
  std::cerr << "embedctl: " << status << "\n";
  return 1;
}

Json Chunks(const google::protobuf::RepeatedPtrField<v1::ChunkScore>& chunks) {
  Json out = Json::array();
  for (const v1::ChunkScore& chunk : chunks) {
    out.push_back({{"scores", std::vector<float>(chunk.scores().begin(), chunk.scores().end())},
                   {"token_span", {chunk.token_span().start(), chunk.token_span().end()}},
                   {"char_span", {chunk.char_span().start(), chunk.char_span().end()}}});
  }
  return out;
}

}  // namespace

int RerankCommand(EmbeddingClient& client, const std::string& model, const std::string& query,
                  const std::vector<std::string>& documents, std::optional<uint32_t> top_n,
                  const std::string& instruction, const v1::ScoreOptions& options) {
  v1::RerankRequest request;
  request.set_model(model);
  request.set_query(query);
  for (const std::string& document : documents) request.add_documents(document);
  if (top_n.has_value()) request.set_top_n(*top_n);
  request.set_return_documents(true);
  request.set_instruction(instruction);
  *request.mutable_options() = options;
  auto response = client.Rerank(request);
  if (!response.ok()) return Fail(response.status());
  for (const v1::RerankResult& result : response->results()) {
    Json line = {{"index", result.index()},          {"score", result.score()},
                 {"document", result.document()},    {"token_count", result.token_count()},
                 {"chunk_count", result.chunk_count()}, {"truncated", result.truncated()}};
    if (result.chunks_size() > 0) line["chunks"] = Chunks(result.chunks());
    std::cout << line.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}

int ClassifyCommand(EmbeddingClient& client, const std::string& model,
                    const std::vector<std::string>& inputs, const std::string& text_pair,
                    const std::string& instruction, const v1::ScoreOptions& options) {
  v1::ClassifyRequest request;
  request.set_model(model);
  request.set_instruction(instruction);
  for (const std::string& input : inputs) {
    request.add_inputs(input);
    if (!text_pair.empty()) request.add_text_pairs(text_pair);
  }
  *request.mutable_options() = options;
  auto response = client.Classify(request);
  if (!response.ok()) return Fail(response.status());
  for (int i = 0; i < response->results_size(); ++i) {
    const v1::Classification& result = response->results(i);
    Json labels = Json::object();
    for (const v1::LabelScore& label : result.labels()) labels[label.label()] = label.score();
    Json line = {{"index", i},
                 {"labels", std::move(labels)},
                 {"token_count", result.token_count()},
                 {"chunk_count", result.chunk_count()},
                 {"truncated", result.truncated()}};
    if (result.chunks_size() > 0) line["chunks"] = Chunks(result.chunks());
    std::cout << line.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace embedding::client
