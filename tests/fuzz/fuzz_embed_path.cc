#include "tests/fuzz/fuzz_embed_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "model_store/demo/demo_model_writer.h"
#include "server/core/chunk_planner.h"
#include "server/core/request_validation.h"

namespace embedding::fuzzing {

namespace fs = std::filesystem;

const model_store::Model& DemoModel() {
  static const model_store::Model* model = [] {
    const fs::path dir = fs::temp_directory_path() / ("request_fuzz." + std::to_string(getpid()));
    model_store::DemoModelSpec spec;
    spec.num_layers = 1;
    spec.hidden_size = 32;
    spec.max_positions = 128;
    spec.vocab_size = 8000;  // the demo writer's minimum
    absl::Status written = model_store::WriteDemoModel(dir.string(), spec);
    auto loaded = model_store::Model::Load(dir.string(), {});
    if (!written.ok() || !loaded.ok()) {
      std::cerr << "request_fuzz: demo model: " << written << " " << loaded.status() << "\n";
      std::abort();
    }
    fs::remove_all(dir);  // loaded: the weights are in memory now
    return loaded->release();
  }();
  return *model;
}

server::RequestLimits Limits() {
  server::RequestLimits limits;
  limits.max_inputs_per_request = 16;
  limits.max_request_bytes = 64 << 10;
  limits.max_tokens_per_document = 4096;
  return limits;
}

namespace {

void CheckPlan(const server::ChunkPlan& plan, uint32_t tokens, uint32_t window) {
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

}  // namespace

void EmbedPath(const server::EmbedCall& call) {
  const auto& model = DemoModel();
  const server::RequestLimits limits = Limits();
  auto params = server::ValidateEmbedCall(call, model, limits);
  if (!params.ok()) return;
  const auto window = static_cast<uint32_t>(model.max_content_tokens());
  std::vector<uint32_t> counts;
  if (const auto* texts = std::get_if<server::TextInputs>(&call.inputs)) {
    for (size_t i = 0; i < texts->size(); ++i) {
      auto tokens = model.tokenizer().Tokenize(params->prompt + (*texts)[i], "inputs");
      if (tokens.ok()) counts.push_back(static_cast<uint32_t>(tokens->ids.size()));
    }
  } else {
    for (const auto& ids : std::get<server::TokenInputs>(call.inputs))
      counts.push_back(static_cast<uint32_t>(ids.size()));
  }
  for (uint32_t count : counts) {
    if (count > limits.max_tokens_per_document) continue;
    auto plan = server::PlanChunks(count, window, *params, "inputs");
    if (plan.ok()) CheckPlan(*plan, count, window);
  }
}

}  // namespace embedding::fuzzing
