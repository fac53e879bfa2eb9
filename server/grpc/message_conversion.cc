#include "server/grpc/message_conversion.h"

#include "model_store/architecture.h"
#include "model_store/unicode_text.h"

namespace embedding::server {
namespace {

void SetSpan(const Span& from, v1::Span* to) {
  to->set_start(from.begin);
  to->set_end(from.end);
}

// One input's tokens, wrapped in the model's special tokens if asked.
void FillTokenizedInput(const model_store::Model& model, const std::string& text,
                        const model_store::TokenizedText& tokens, bool add_special_tokens,
                        v1::TokenizedInput* out);

}  // namespace

EmbedCall ToEmbedCall(v1::EmbedRequest* request, absl::Time deadline) {
  EmbedCall call;
  EmbedRequestOptions& options = call.options;
  options.model = std::move(*request->mutable_model());
  if (request->has_temperature()) options.temperature = request->temperature();
  options.strategy = request->strategy();
  options.truncation_side = request->truncation_side();
  if (request->has_chunk_tokens()) options.chunk_tokens = request->chunk_tokens();
  if (request->has_chunk_overlap_tokens())
    options.chunk_overlap_tokens = request->chunk_overlap_tokens();
  if (request->has_normalize()) options.normalize = request->normalize();
  if (request->has_dimensions()) options.dimensions = request->dimensions();
  options.prompt = std::move(*request->mutable_prompt());
  options.prompt_name = std::move(*request->mutable_prompt_name());
  TextInputs texts;
  texts.reserve(static_cast<size_t>(request->inputs_size()));
  for (std::string& input : *request->mutable_inputs()) texts.push_back(std::move(input));
  call.inputs = std::move(texts);
  call.deadline = deadline;
  return call;
}

TokenizeCall ToTokenizeCall(v1::TokenizeRequest* request) {
  TokenizeCall call;
  call.model = std::move(*request->mutable_model());
  call.add_special_tokens = !request->has_add_special_tokens() || request->add_special_tokens();
  call.inputs.reserve(static_cast<size_t>(request->inputs_size()));
  for (std::string& input : *request->mutable_inputs()) call.inputs.push_back(std::move(input));
  return call;
}

void FillEmbedResponse(const EmbedAnswer& answer, v1::EmbedResponse* response) {
  const EmbedResult& result = answer.result;
  response->set_model(answer.model->name);
  response->set_model_version(answer.model->version);
  response->set_strategy(answer.params.strategy);
  for (const DocumentResult& doc : result.documents) {
    v1::DocumentEmbedding* out = response->add_documents();
    out->mutable_vector()->Assign(doc.vector.begin(), doc.vector.end());
    out->set_token_count(doc.token_count);
    out->set_chunk_count(doc.chunk_count);
    out->set_truncated(doc.truncated);
    out->set_temperature(doc.temperature);
    out->set_length_bucket(doc.length_bucket);
    out->set_high_frequency_ratio(MeanHighFrequencyRatio(doc));
    for (const ChunkResult& chunk : doc.chunks) {
      v1::ChunkEmbedding* c = out->add_chunks();
      c->mutable_vector()->Assign(chunk.vector.begin(), chunk.vector.end());
      SetSpan(chunk.tokens, c->mutable_token_span());
      SetSpan(chunk.chars, c->mutable_char_span());
      SetSpan(chunk.bytes, c->mutable_byte_span());
    }
  }
  v1::Usage* usage = response->mutable_usage();
  usage->set_documents(result.documents.size());
  usage->set_tokens(result.tokens);
  usage->set_sequences(result.sequences);
  usage->set_sequence_tokens(result.sequence_tokens);
  v1::Timings* timings = response->mutable_timings();
  timings->set_queue_seconds(result.queue_seconds);
  timings->set_tokenize_seconds(result.tokenize_seconds);
  timings->set_inference_seconds(result.inference_seconds);
  timings->set_total_seconds(result.total_seconds);
}

void FillModelInfo(const ServedModel& served, const RequestLimits& limits, v1::ModelInfo* info) {
  const model_store::Model& model = *served.model;
  info->set_name(served.name);
  info->set_version(served.version);
  info->set_architecture(model.config().model_type);
  info->set_dimensions(static_cast<uint32_t>(model.config().hidden_size));
  info->set_max_positions(static_cast<uint32_t>(model.config().max_sequence_length()));
  info->set_max_window_tokens(static_cast<uint32_t>(model.max_content_tokens()));
  info->set_pooling(model_store::PoolingModeName(model.pooling()));
  info->set_dtype(model_store::ComputeDTypeName(model.encoder().dtype()));
  info->set_default_temperature(limits.default_temperature);
  info->set_min_temperature(limits.min_temperature);
  info->set_max_temperature(limits.max_temperature);
  for (Strategy s : AllStrategies()) info->add_strategies(s);
  info->set_default_strategy(limits.default_strategy);
  info->set_vocab_size(static_cast<uint32_t>(model.config().vocab_size));
  info->set_layers(static_cast<uint32_t>(model.config().num_hidden_layers));
  for (const auto& [name, text] : model.sentence_transformers().prompts)
    info->add_prompt_names(name);
  info->set_demo(model.is_demo());
}

void FillTokenizeResponse(const TokenizeAnswer& answer, v1::TokenizeResponse* response) {
  response->set_model(answer.model->name);
  for (size_t i = 0; i < answer.tokens.size(); ++i) {
    FillTokenizedInput(*answer.model->model, answer.inputs[i], answer.tokens[i],
                       answer.add_special_tokens, response->add_inputs());
  }
}

namespace {

void FillTokenizedInput(const model_store::Model& model, const std::string& text,
                        const model_store::TokenizedText& tokens, bool add_special_tokens,
                        v1::TokenizedInput* out) {
  const model_store::Tokenizer& tokenizer = model.tokenizer();
  auto add_special = [&](int32_t id) {
    v1::Token* t = out->add_tokens();
    t->set_id(id);
    t->set_text(tokenizer.IdToToken(id));
    t->set_special(true);
    t->mutable_char_span();
    t->mutable_byte_span();
  };
  if (add_special_tokens) {
    for (int32_t id : model.special_prefix()) add_special(id);
  }
  model_store::CodePointIndex chars(text);
  for (size_t i = 0; i < tokens.ids.size(); ++i) {
    v1::Token* t = out->add_tokens();
    t->set_id(tokens.ids[i]);
    t->set_text(tokenizer.IdToToken(tokens.ids[i]));
    SetSpan(tokens.spans[i], t->mutable_byte_span());
    SetSpan({chars.CharsBefore(tokens.spans[i].begin), chars.CharsBefore(tokens.spans[i].end)},
            t->mutable_char_span());
  }
  if (add_special_tokens) {
    for (int32_t id : model.special_suffix()) add_special(id);
  }
}

}  // namespace

}  // namespace embedding::server
