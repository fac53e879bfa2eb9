// libFuzzer target: raw request bytes through what the server does before the model runs.
// The first byte picks the message (Embed, an EmbedStream item, Tokenize: the rest is its
// protobuf wire form; or an OpenAI /v1/embeddings body: the rest is its JSON). Parse (with the
// wire-level input count) into the core's EmbedCall, validate against a real demo model,
// tokenise every input as the job would (prompt first), and plan its chunks. Any plan must
// cover the document inside the model's window.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "embedding/v1/embedding.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "model_store/demo/demo_model_writer.h"
#include "model_store/model.h"
#include "server/core/chunk_planner.h"
#include "server/core/request_validation.h"
#include "server/grpc/grpc_messages.h"
#include "server/http/openai_api.h"

namespace {
namespace fs = std::filesystem;
using embedding::server::ChunkPlan;
using embedding::server::RequestLimits;

// A one-layer demo model with a 128-token window, written once per fuzzing process. Small
// bounds, so that the fuzzer reaches every limit quickly.
const embedding::model_store::Model& DemoModel() {
  static const embedding::model_store::Model* model = [] {
    const fs::path dir = fs::temp_directory_path() / ("request_fuzz." + std::to_string(getpid()));
    embedding::model_store::DemoModelSpec spec;
    spec.num_layers = 1;
    spec.hidden_size = 32;
    spec.max_positions = 128;
    spec.vocab_size = 8000;  // the demo writer's minimum
    absl::Status written = embedding::model_store::WriteDemoModel(dir.string(), spec);
    auto loaded = embedding::model_store::Model::Load(dir.string(), {});
    if (!written.ok() || !loaded.ok()) {
      std::cerr << "request_fuzz: demo model: " << written << " " << loaded.status() << "\n";
      std::abort();
    }
    fs::remove_all(dir);  // loaded: the weights are in memory now
    return loaded->release();
  }();
  return *model;
}

RequestLimits Limits() {
  RequestLimits limits;
  limits.max_inputs_per_request = 16;
  limits.max_request_bytes = 64 << 10;
  limits.max_tokens_per_document = 4096;
  return limits;
}

void CheckPlan(const ChunkPlan& plan, uint32_t tokens, uint32_t window) {
  if (plan.chunks.empty() || plan.sequences.empty()) std::abort();
  for (const auto& span : plan.sequences) {
    if (span.begin > span.end || span.end > tokens || span.size() > window) std::abort();
  }
  for (const auto& span : plan.chunks) {
    if (span.begin > span.end || span.end > tokens) std::abort();
  }
  if (!plan.token_window.empty()) {
    if (plan.token_window.size() != tokens) std::abort();
    for (uint32_t t = 0; t < tokens; ++t) {
      const uint32_t w = plan.token_window[t];
      if (w >= plan.sequences.size() || t < plan.sequences[w].begin || t >= plan.sequences[w].end) {
        std::abort();
      }
    }
  }
}

// Validates the call and plans each input as the job would (texts tokenised, prompt first).
void EmbedPath(const embedding::server::EmbedCall& call) {
  const auto& model = DemoModel();
  const RequestLimits limits = Limits();
  auto params = embedding::server::ValidateEmbedCall(call, model, limits);
  if (!params.ok()) return;
  const auto window = static_cast<uint32_t>(model.max_content_tokens());
  std::vector<uint32_t> counts;
  if (const auto* texts = std::get_if<embedding::server::TextInputs>(&call.inputs)) {
    for (size_t i = 0; i < texts->size(); ++i) {
      auto tokens = model.tokenizer().Tokenize(params->prompt + (*texts)[i], "inputs");
      if (tokens.ok()) counts.push_back(static_cast<uint32_t>(tokens->ids.size()));
    }
  } else {
    for (const auto& ids : std::get<embedding::server::TokenInputs>(call.inputs))
      counts.push_back(static_cast<uint32_t>(ids.size()));
  }
  for (uint32_t count : counts) {
    if (count > limits.max_tokens_per_document) continue;
    auto plan = embedding::server::PlanChunks(count, window, *params, "inputs");
    if (plan.ok()) CheckPlan(*plan, count, window);
  }
}

void EmbedPath(embedding::v1::EmbedRequest* request) {
  EmbedPath(embedding::server::ToEmbedCall(request, absl::InfiniteFuture()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Every invalid-UTF-8 input makes protobuf log a line (the server rate-limits them).
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  grpc::Slice slice(data + 1, size - 1);
  const grpc::ByteBuffer buffer(&slice, 1);
  const int64_t max_inputs = Limits().max_inputs_per_request;
  switch (data[0] % 4) {
    case 0: {
      embedding::v1::EmbedRequest request;
      if (embedding::server::ParseRequest(buffer, &request, max_inputs).ok()) EmbedPath(&request);
      break;
    }
    case 1: {
      (void)embedding::server::StreamRequestId(buffer);
      embedding::v1::EmbedStreamRequest item;
      if (embedding::server::ParseRequest(buffer, &item, max_inputs).ok())
        EmbedPath(item.mutable_request());
      break;
    }
    case 2: {
      embedding::v1::TokenizeRequest request;
      if (!embedding::server::ParseRequest(buffer, &request, max_inputs).ok()) break;
      for (const std::string& input : request.inputs())
        (void)DemoModel().tokenizer().Tokenize(input, "inputs");
      break;
    }
    case 3: {
      auto body = embedding::server::ParseOpenAiEmbeddingsRequest(
          std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), Limits());
      if (body.ok()) EmbedPath(body->call);
      break;
    }
  }
  return 0;
}
