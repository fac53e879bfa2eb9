#include "server/grpc/score_messages.h"

#include "common/status_macros.h"
#include "model_store/encoder/encoder.h"
#include "server/core/model_catalog.h"
#include "server/grpc/grpc_messages.h"

namespace embedding::server {
namespace {

absl::StatusOr<ScoreOptions> FromWireOptions(v1::ScoreOptions* wire, std::string model) {
  ScoreOptions options;
  options.model = std::move(model);
  ASSIGN_OR_RETURN(auto mode, FromWire(wire->temperature_mode(), "options.temperature_mode"));
  options.temperature_mode = mode.value_or(TemperatureMode::kFixed);
  ASSIGN_OR_RETURN(options.strategy, FromWire(wire->strategy(), "options.strategy"));
  ASSIGN_OR_RETURN(auto side, FromWire(wire->truncation_side(), "options.truncation_side"));
  options.truncation_side = side.value_or(TruncationSide::kKeepStart);
  if (wire->has_temperature()) options.temperature = wire->temperature();
  if (wire->has_chunk_tokens()) options.chunk_tokens = wire->chunk_tokens();
  if (wire->has_chunk_overlap_tokens()) options.chunk_overlap_tokens = wire->chunk_overlap_tokens();
  options.raw_scores = wire->raw_scores();
  options.return_chunks = wire->return_chunks();
  return options;
}

void FillChunks(const ScoredInput& input, google::protobuf::RepeatedPtrField<v1::ChunkScore>* out) {
  for (const ChunkScore& chunk : input.chunks) {
    v1::ChunkScore* c = out->Add();
    c->mutable_scores()->Assign(chunk.scores.begin(), chunk.scores.end());
    SetSpan(chunk.tokens, c->mutable_token_span());
    SetSpan(chunk.chars, c->mutable_char_span());
    SetSpan(chunk.bytes, c->mutable_byte_span());
    c->set_temperature(chunk.temperature);
  }
}

template <typename Response>
void FillHeader(const ScoreAnswer& answer, Response* response) {
  response->set_model(answer.model->name);
  response->set_model_version(answer.model->version);
  response->set_dtype(model_store::ComputeDTypeName(answer.model->model->encoder().dtype()));
  FillUsage(answer.usage, response->mutable_usage(), response->mutable_timings());
}

}  // namespace

absl::StatusOr<RerankCall> ToRerankCall(v1::RerankRequest* request, absl::Time deadline) {
  RerankCall call;
  ASSIGN_OR_RETURN(call.options, FromWireOptions(request->mutable_options(),
                                                 std::move(*request->mutable_model())));
  call.query = std::move(*request->mutable_query());
  call.documents.reserve(static_cast<size_t>(request->documents_size()));
  for (std::string& document : *request->mutable_documents())
    call.documents.push_back(std::move(document));
  if (request->has_top_n()) call.top_n = request->top_n();
  call.options.instruction = std::move(*request->mutable_instruction());
  call.deadline = deadline;
  return call;
}

absl::StatusOr<ClassifyCall> ToClassifyCall(v1::ClassifyRequest* request, absl::Time deadline) {
  ClassifyCall call;
  ASSIGN_OR_RETURN(call.options, FromWireOptions(request->mutable_options(),
                                                 std::move(*request->mutable_model())));
  for (std::string& input : *request->mutable_inputs()) call.inputs.push_back(std::move(input));
  for (std::string& first : *request->mutable_text_pairs())
    call.pair_firsts.push_back(std::move(first));
  call.options.instruction = std::move(*request->mutable_instruction());
  call.deadline = deadline;
  return call;
}

void FillRerankResponse(const ScoreAnswer& answer, const std::vector<std::string>* documents,
                        v1::RerankResponse* response) {
  FillHeader(answer, response);
  response->set_strategy(ToWire(answer.params.strategy));
  for (const ScoredInput& input : answer.results) {
    v1::RerankResult* result = response->add_results();
    result->set_index(input.index);
    result->set_score(input.scores.empty() ? 0.0f : input.scores[0]);
    if (documents != nullptr) result->set_document((*documents)[input.index]);
    result->set_token_count(input.token_count);
    result->set_chunk_count(input.chunk_count);
    result->set_truncated(input.truncated);
    FillChunks(input, result->mutable_chunks());
  }
}

void FillClassifyResponse(const ScoreAnswer& answer, v1::ClassifyResponse* response) {
  FillHeader(answer, response);
  const std::vector<std::string>& labels = answer.model->model->config().classifier.labels;
  for (const ScoredInput& input : answer.results) {
    v1::Classification* result = response->add_results();
    for (size_t l = 0; l < input.scores.size() && l < labels.size(); ++l) {
      v1::LabelScore* label = result->add_labels();
      label->set_label(labels[l]);
      label->set_score(input.scores[l]);
    }
    result->set_token_count(input.token_count);
    result->set_chunk_count(input.chunk_count);
    result->set_truncated(input.truncated);
    FillChunks(input, result->mutable_chunks());
  }
}

}  // namespace embedding::server
