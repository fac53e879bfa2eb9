#include "server/grpc/grpc_messages.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "model_store/spec/architecture.h"
#include "model_store/text/unicode_text.h"
#include "server/core/request_validation.h"
#include "server/core/vector_encoding.h"
#include "server/grpc/unchecked_requests.pb.h"

namespace embedding::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

bool ParseFrom(const grpc::ByteBuffer& buffer, Message* message) {
  grpc::ByteBuffer copy(buffer);  // the reader consumes; slices are shared, not copied
  grpc::ProtoBufferReader reader(&copy);
  return message->ParseFromZeroCopyStream(&reader);
}

// The twin of `public_message`: same name in package embedding.v1.unchecked.
std::unique_ptr<Message> NewTwin(const Message& public_message) {
  const std::string name =
      absl::StrCat("embedding.v1.unchecked.", public_message.GetDescriptor()->name());
  const auto* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(name);
  if (descriptor == nullptr) return nullptr;
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
}

// The first `bytes` field of `message` (a twin, where every bytes field is a public string)
// that is not UTF-8, named by its path.
absl::Status FindInvalidUtf8(const Message& message, const std::string& path) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string name = path + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string label = field->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (field->type() == FieldDescriptor::TYPE_BYTES) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        absl::Status status = model_store::ValidateUtf8(value, label);
        if (!status.ok()) return status;
      } else if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
        const Message& child = field->is_repeated()
                                   ? reflection->GetRepeatedMessage(message, field, i)
                                   : reflection->GetMessage(message, field);
        absl::Status status = FindInvalidUtf8(child, label + ".");
        if (!status.ok()) return status;
      }
    }
  }
  return absl::OkStatus();
}

// Entries of field `field` inside the length-delimited fields `path[depth..]` of the message
// `in` reads, counted on the wire. Stops once `*count` exceeds `limit`; a malformed message
// stops the count (the parse after reports it).
void CountOnWire(google::protobuf::io::CodedInputStream* in, const std::vector<int>& path,
                 size_t depth, int field, int64_t limit, int64_t* count) {
  using WireFormat = google::protobuf::internal::WireFormatLite;
  while (*count <= limit) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return;
    const int number = WireFormat::GetTagFieldNumber(tag);
    const bool nested = WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED;
    if (depth < path.size() && number == path[depth] && nested) {
      uint32_t length = 0;
      if (!in->ReadVarint32(&length)) return;
      const auto outer = in->PushLimit(static_cast<int>(length));
      CountOnWire(in, path, depth + 1, field, limit, count);
      if (!in->Skip(in->BytesUntilLimit())) return;
      in->PopLimit(outer);
      continue;
    }
    if (depth == path.size() && number == field) ++*count;
    if (!WireFormat::SkipField(in, tag)) return;
  }
}

// A repeated text field whose entries each become work (inputs, a rerank's documents, a
// classify's text pairs), and where it sits: {} in a request, {request} in a stream item.
struct CountedList {
  std::vector<int> path;
  int field = 0;
  std::string name;
};

void CountedLists(const google::protobuf::Descriptor* descriptor, const std::vector<int>& path,
                  const std::string& prefix, std::vector<CountedList>* out) {
  for (const char* list : {"inputs", "documents", "text_pairs"}) {
    if (const FieldDescriptor* field = descriptor->FindFieldByName(list))
      out->push_back({path, field->number(), prefix + list});
  }
  const FieldDescriptor* request = descriptor->FindFieldByName("request");
  if (request == nullptr || request->message_type() == nullptr) return;
  std::vector<int> nested = path;
  nested.push_back(request->number());
  CountedLists(request->message_type(), nested, prefix + "request.", out);
}

absl::Status CheckInputCount(const grpc::ByteBuffer& buffer, const Message& message,
                             int64_t max_inputs) {
  std::vector<CountedList> lists;
  CountedLists(message.GetDescriptor(), {}, "", &lists);
  for (const CountedList& list : lists) {
    grpc::ByteBuffer copy(buffer);
    grpc::ProtoBufferReader reader(&copy);
    google::protobuf::io::CodedInputStream in(&reader);
    int64_t count = 0;
    CountOnWire(&in, list.path, 0, list.field, max_inputs, &count);
    if (count <= max_inputs) continue;
    return absl::InvalidArgumentError(absl::StrCat(list.name, ": more than ", max_inputs,
                                                   " inputs; allowed [1, ", max_inputs,
                                                   "] (--max-inputs-per-request)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseRequest(const grpc::ByteBuffer& buffer, Message* message, int64_t max_inputs) {
  if (absl::Status count = CheckInputCount(buffer, *message, max_inputs); !count.ok()) return count;
  if (ParseFrom(buffer, message)) return absl::OkStatus();
  std::unique_ptr<Message> twin = NewTwin(*message);
  if (twin != nullptr && ParseFrom(buffer, twin.get())) {
    absl::Status bad_text = FindInvalidUtf8(*twin, "");
    if (!bad_text.ok()) return bad_text;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("request: not a valid ", message->GetTypeName(), " (malformed protobuf)"));
}

std::string StreamRequestId(const grpc::ByteBuffer& buffer) {
  v1::unchecked::EmbedStreamRequest twin;
  if (!ParseFrom(buffer, &twin)) return "";
  if (!model_store::ValidateUtf8(twin.request_id(), "request_id").ok()) return "";
  return twin.request_id();
}

void SerializeResponse(const Message& message, grpc::ByteBuffer* buffer) {
  bool own_buffer = false;
  grpc::SerializationTraits<Message>::Serialize(message, buffer, &own_buffer);
}

void SetSpan(const Span& from, v1::Span* to) {
  to->set_start(from.begin);
  to->set_end(from.end);
}

namespace {

// One input's tokens, wrapped in the model's special tokens if asked.
void FillTokenizedInput(const model_store::Model& model, const std::string& text,
                        const model_store::TokenizedText& tokens, bool add_special_tokens,
                        v1::TokenizedInput* out);

// Each table pairs every defined wire value but UNSPECIFIED with the core's value
// (message_enums_test checks that both directions cover both enums).
constexpr std::pair<v1::LongTextStrategy, Strategy> kStrategies[] = {
    {v1::LONG_TEXT_STRATEGY_REJECT, Strategy::kReject},
    {v1::LONG_TEXT_STRATEGY_TRUNCATE, Strategy::kTruncate},
    {v1::LONG_TEXT_STRATEGY_CHUNK_MEAN, Strategy::kChunkMean},
    {v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN, Strategy::kChunkWeightedMean},
    {v1::LONG_TEXT_STRATEGY_CHUNK_MAX, Strategy::kChunkMax},
    {v1::LONG_TEXT_STRATEGY_CHUNK_ALL, Strategy::kChunkAll},
    {v1::LONG_TEXT_STRATEGY_LATE_CHUNKING, Strategy::kLateChunking},
};
constexpr std::pair<v1::EmbeddingOutput, Output> kOutputs[] = {
    {v1::EMBEDDING_OUTPUT_DENSE, Output::kDense},
    {v1::EMBEDDING_OUTPUT_SPARSE, Output::kSparse},
    {v1::EMBEDDING_OUTPUT_MULTI_VECTOR, Output::kMultiVector}};
constexpr std::pair<v1::VectorEncoding, VectorEncoding> kEncodings[] = {
    {v1::VECTOR_ENCODING_FLOAT32, VectorEncoding::kFloat32},
    {v1::VECTOR_ENCODING_FLOAT16, VectorEncoding::kFloat16},
    {v1::VECTOR_ENCODING_INT8, VectorEncoding::kInt8},
    {v1::VECTOR_ENCODING_BINARY, VectorEncoding::kBinary}};
constexpr std::pair<v1::TemperatureMode, TemperatureMode> kModes[] = {
    {v1::TEMPERATURE_MODE_FIXED, TemperatureMode::kFixed},
    {v1::TEMPERATURE_MODE_AUTO, TemperatureMode::kAuto}};
constexpr std::pair<v1::InputRole, model_store::InputRole> kRoles[] = {
    {v1::INPUT_ROLE_DOCUMENT, model_store::InputRole::kDocument},
    {v1::INPUT_ROLE_QUERY, model_store::InputRole::kQuery}};
constexpr std::pair<v1::TruncationSide, TruncationSide> kSides[] = {
    {v1::TRUNCATION_SIDE_KEEP_START, TruncationSide::kKeepStart},
    {v1::TRUNCATION_SIDE_KEEP_END, TruncationSide::kKeepEnd}};

template <typename Wire, typename Core, size_t N>
absl::StatusOr<std::optional<Core>> Lookup(const std::pair<Wire, Core> (&table)[N], Wire value,
                                           absl::string_view field) {
  if (static_cast<int>(value) == 0) return std::nullopt;  // every enum's UNSPECIFIED
  for (const auto& [wire, core] : table)
    if (wire == value) return core;
  const auto* descriptor = google::protobuf::GetEnumDescriptor<Wire>();
  std::vector<std::string> names;
  int min = descriptor->value(0)->number(), max = min;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    names.push_back(descriptor->value(i)->name());
    min = std::min(min, descriptor->value(i)->number());
    max = std::max(max, descriptor->value(i)->number());
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown value ", static_cast<int>(value),
                                                 "; allowed ", min, "..", max, " (",
                                                 absl::StrJoin(names, ", "), ")"));
}

template <typename Wire, typename Core, size_t N>
Wire Reverse(const std::pair<Wire, Core> (&table)[N], Core value) {
  for (const auto& [wire, core] : table)
    if (core == value) return wire;
  return static_cast<Wire>(0);  // not reached: every core value has a row
}

}  // namespace

absl::StatusOr<std::optional<Strategy>> FromWire(v1::LongTextStrategy value,
                                                 absl::string_view field) {
  return Lookup(kStrategies, value, field);
}
absl::StatusOr<std::optional<Output>> FromWire(v1::EmbeddingOutput value, absl::string_view field) {
  return Lookup(kOutputs, value, field);
}
absl::StatusOr<std::optional<VectorEncoding>> FromWire(v1::VectorEncoding value,
                                                       absl::string_view field) {
  return Lookup(kEncodings, value, field);
}
absl::StatusOr<std::optional<TemperatureMode>> FromWire(v1::TemperatureMode value,
                                                        absl::string_view field) {
  return Lookup(kModes, value, field);
}
absl::StatusOr<std::optional<TruncationSide>> FromWire(v1::TruncationSide value,
                                                       absl::string_view field) {
  return Lookup(kSides, value, field);
}

v1::LongTextStrategy ToWire(Strategy strategy) { return Reverse(kStrategies, strategy); }
v1::EmbeddingOutput ToWire(Output output) { return Reverse(kOutputs, output); }
v1::VectorEncoding ToWire(VectorEncoding encoding) { return Reverse(kEncodings, encoding); }
v1::TemperatureMode ToWire(TemperatureMode mode) { return Reverse(kModes, mode); }
v1::TruncationSide ToWire(TruncationSide side) { return Reverse(kSides, side); }

std::string WireOutputName(Output output) { return v1::EmbeddingOutput_Name(ToWire(output)); }

absl::StatusOr<EmbedCall> ToEmbedCall(v1::EmbedRequest* request, absl::Time deadline) {
  EmbedCall call;
  call.output_spelling = WireOutputName;
  EmbedRequestOptions& options = call.options;
  ASSIGN_OR_RETURN(auto mode, FromWire(request->temperature_mode(), "temperature_mode"));
  options.temperature_mode = mode.value_or(TemperatureMode::kFixed);
  ASSIGN_OR_RETURN(options.strategy, FromWire(request->strategy(), "strategy"));
  ASSIGN_OR_RETURN(auto side, FromWire(request->truncation_side(), "truncation_side"));
  options.truncation_side = side.value_or(TruncationSide::kKeepStart);
  for (int i = 0; i < request->outputs_size(); ++i) {
    ASSIGN_OR_RETURN(auto output, FromWire(static_cast<v1::EmbeddingOutput>(request->outputs(i)),
                                           absl::StrCat("outputs[", i, "]")));
    options.outputs.push_back(output.value_or(Output::kDense));
  }
  ASSIGN_OR_RETURN(options.multi_vector_encoding,
                   FromWire(request->multi_vector_encoding(), "multi_vector_encoding"));
  ASSIGN_OR_RETURN(options.input_role, Lookup(kRoles, request->input_role(), "input_role"));
  options.model = std::move(*request->mutable_model());
  if (request->has_temperature()) options.temperature = request->temperature();
  if (request->has_chunk_tokens()) options.chunk_tokens = request->chunk_tokens();
  if (request->has_chunk_overlap_tokens())
    options.chunk_overlap_tokens = request->chunk_overlap_tokens();
  if (request->has_normalize()) options.normalize = request->normalize();
  if (request->has_dimensions()) options.dimensions = request->dimensions();
  options.prompt = std::move(*request->mutable_prompt());
  options.prompt_name = std::move(*request->mutable_prompt_name());
  options.task = std::move(*request->mutable_task());
  if (request->has_max_vectors()) options.max_vectors = request->max_vectors();
  if (request->has_pool_factor()) options.pool_factor = request->pool_factor();
  if (request->has_sparse_top_k()) options.sparse_top_k = request->sparse_top_k();
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

namespace {

void FillSparse(const SparseResult& sparse, const model_store::Tokenizer& tokenizer,
                v1::SparseEmbedding* out) {
  out->mutable_weights()->Assign(sparse.weights.begin(), sparse.weights.end());
  for (int32_t id : sparse.ids) {
    out->add_token_ids(static_cast<uint32_t>(id));
    out->add_tokens(tokenizer.IdToToken(id));
  }
}

void FillMultiVector(const MultiVectorResult& vectors, VectorEncoding encoding,
                     v1::MultiVector* out) {
  out->set_count(static_cast<uint32_t>(vectors.count()));
  out->set_dimensions(vectors.dim);
  out->set_encoding(ToWire(encoding));
  switch (encoding) {
    case VectorEncoding::kFloat16:
      out->set_data(EncodeFloat16(vectors.values));
      break;
    case VectorEncoding::kInt8: {
      std::vector<float> scales;
      out->set_data(EncodeInt8(vectors.values, vectors.dim, &scales));
      out->mutable_scales()->Assign(scales.begin(), scales.end());
      break;
    }
    case VectorEncoding::kBinary:
      out->set_data(EncodeBinary(vectors.values, vectors.dim));
      break;
    case VectorEncoding::kFloat32:
      out->mutable_values()->Assign(vectors.values.begin(), vectors.values.end());
  }
  for (const Span& span : vectors.token_spans) SetSpan(span, out->add_token_spans());
}

}  // namespace

void FillEmbedResponse(const EmbedAnswer& answer, v1::EmbedResponse* response) {
  const EmbedParams& params = answer.params;
  // Only sparse output names tokens (and a model is there whenever it was asked for).
  const model_store::Tokenizer* tokenizer =
      params.sparse ? &answer.model->model->tokenizer() : nullptr;
  const EmbedResult& result = answer.result;
  response->set_model(answer.model->name);
  response->set_model_version(answer.model->version);
  response->set_dtype(model_store::ComputeDTypeName(answer.model->model->encoder().dtype()));
  response->set_strategy(ToWire(answer.params.strategy));
  response->set_temperature_mode(
      ToWire(answer.params.auto_temperature ? TemperatureMode::kAuto : TemperatureMode::kFixed));
  for (const DocumentResult& doc : result.documents) {
    v1::DocumentEmbedding* out = response->add_documents();
    if (params.dense) out->mutable_vector()->Assign(doc.vector.begin(), doc.vector.end());
    if (params.sparse) FillSparse(doc.sparse, *tokenizer, out->mutable_sparse());
    if (params.multi_vector) {
      FillMultiVector(doc.multi_vector, params.multi_vector_encoding, out->mutable_multi_vector());
    }
    out->set_token_count(doc.token_count);
    out->set_chunk_count(doc.chunk_count);
    out->set_truncated(doc.truncated);
    out->set_temperature(doc.temperature);
    out->set_length_bucket(doc.length_bucket);
    out->set_high_frequency_ratio(MeanHighFrequencyRatio(doc));
    out->mutable_sequence_temperatures()->Assign(doc.sequence_temperatures.begin(),
                                                 doc.sequence_temperatures.end());
    out->mutable_sequence_local_temperatures()->Assign(doc.sequence_local_temperatures.begin(),
                                                       doc.sequence_local_temperatures.end());
    for (const ChunkResult& chunk : doc.chunks) {
      v1::ChunkEmbedding* c = out->add_chunks();
      if (params.dense) c->mutable_vector()->Assign(chunk.vector.begin(), chunk.vector.end());
      if (params.sparse) FillSparse(chunk.sparse, *tokenizer, c->mutable_sparse());
      if (params.multi_vector) {
        FillMultiVector(chunk.multi_vector, params.multi_vector_encoding,
                        c->mutable_multi_vector());
      }
      SetSpan(chunk.tokens, c->mutable_token_span());
      SetSpan(chunk.chars, c->mutable_char_span());
      SetSpan(chunk.bytes, c->mutable_byte_span());
      c->set_temperature(chunk.temperature);
    }
  }
  FillUsage(result, response->mutable_usage(), response->mutable_timings());
}

void FillUsage(const EmbedResult& result, v1::Usage* usage, v1::Timings* timings) {
  usage->set_documents(result.documents.size());
  usage->set_tokens(result.tokens);
  usage->set_sequences(result.sequences);
  usage->set_sequence_tokens(result.sequence_tokens);
  timings->set_queue_seconds(result.queue_seconds);
  timings->set_tokenize_seconds(result.tokenize_seconds);
  timings->set_inference_seconds(result.inference_seconds);
  timings->set_total_seconds(result.total_seconds);
}

void FillModelInfo(const ServedModel& served, const RequestLimits& limits, v1::ModelInfo* info) {
  const model_store::Model& model = *served.model;
  info->set_name(served.name);
  info->set_version(served.version);
  info->set_architecture(model.config().family);
  info->set_dimensions(static_cast<uint32_t>(model.encoder().embedding_dim()));
  info->set_max_positions(static_cast<uint32_t>(model.max_input_length()));
  info->set_max_window_tokens(static_cast<uint32_t>(model.max_content_tokens()));
  info->set_pooling(model_store::PoolingModeName(model.pooling()));
  info->set_causal(model.config().causal);
  info->set_device(model_store::ComputeDeviceName(model.encoder().device()));
  const model_store::ClassifierConfig& head = model.config().classifier;
  info->set_kind(model_store::ModelKindName(head.kind));
  if (head.kind != model_store::ModelKind::kEmbedding) {
    for (const std::string& label : head.labels) info->add_labels(label);
    info->set_head(head.architecture);
    info->set_score_function(ScoreFunctionName(head.score));
    info->set_default_instruction(head.prompt.default_instruction);
  }
  const std::vector<int32_t>& appended = model.tokenizer().config().suffix_ids;
  if (model.pooling() == model_store::PoolingMode::kLastToken && !appended.empty()) {
    info->set_pooled_token(model.tokenizer().IdToToken(appended.back()));
  }
  info->set_dtype(model_store::ComputeDTypeName(model.encoder().dtype()));
  if (const std::optional<double> bound = model.batch_invariance_bound()) {
    info->set_batch_invariance_bound(static_cast<float>(*bound));
  }
  info->set_default_temperature(limits.default_temperature);
  info->set_min_temperature(limits.min_temperature);
  info->set_max_temperature(limits.max_temperature);
  for (Strategy s : AllStrategies()) info->add_strategies(ToWire(s));
  info->set_default_strategy(ToWire(limits.default_strategy));
  info->set_vocab_size(static_cast<uint32_t>(model.config().vocab_size));
  info->set_layers(static_cast<uint32_t>(model.config().num_hidden_layers));
  for (const auto& [name, text] : model.sentence_transformers().prompts)
    info->add_prompt_names(name);
  for (const std::string& task : model.config().adapters) info->add_tasks(task);
  for (const int64_t width : model.config().matryoshka_dimensions) {
    info->add_matryoshka_dimensions(static_cast<uint32_t>(width));
  }
  info->set_demo(model.is_demo());
  for (Output output : OfferedOutputs(model)) info->add_outputs(ToWire(output));
  info->set_multi_vector_dimensions(static_cast<uint32_t>(model.encoder().multi_vector_dim()));
  if (const model_store::LateInteraction* late = model.late_interaction()) {
    v1::LateInteractionInfo* out = info->mutable_late_interaction();
    out->set_layout(late->layout());
    out->set_query_length(static_cast<uint32_t>(late->config().query_length));
    out->set_document_length(static_cast<uint32_t>(model.max_input_length()));
    out->set_query_expansion(late->config().do_query_expansion);
    out->set_attend_to_expansion(late->config().attend_to_expansion_tokens);
  }
  if (served.hub) {
    info->set_repository(served.hub->repository);
    info->set_revision(served.hub->revision);
    info->set_commit(served.hub->commit);
  }
  const model_store::TempScaleSchedule& schedule = model.tempscale();
  v1::TempScaleSchedule* out = info->mutable_tempscale_schedule();
  out->set_form(schedule.form_name());
  for (const model_store::SchedulePoint& p : schedule.points()) {
    v1::SchedulePoint* point = out->add_points();
    point->set_min_tokens(p.min_tokens);
    point->set_tau(p.tau);
  }
  out->set_n_ref(schedule.n_ref());
  out->set_alpha(schedule.alpha());
  out->set_tau_min(schedule.tau_min());
  out->set_source(schedule.source());
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
