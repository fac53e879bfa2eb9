// The options the core reads: which models to serve and how, and the bounds every request is
// held to. Plain structs, filled once from flags (server/app/server_options.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model_store/encoder/encoder.h"
#include "model_store/hub/hub_reference.h"
#include "model_store/hub/hub_settings.h"
#include "server/core/strategy.h"

namespace embedding::server {

struct ModelSource {
  std::string name;
  std::string directory;  // empty for a Hub model
  // A Hub repository, fetched into and read from Hugging Face's cache (model_source.h).
  std::optional<model_store::HubReference> hub;
  model_store::HubSettings hub_settings;
  // --tempscale-schedule: a schedule file for this model instead of its directory's
  // tempscale.json; empty: the directory's.
  std::string tempscale_schedule;
  // --hf_overrides: a JSON object whose keys replace config.json's (model.h); empty: none.
  std::string hf_overrides;
};

struct ModelOptions {
  std::vector<ModelSource> sources;  // --model NAME=DIR (repeatable) and --model-store DIR
  std::string store;          // --model-store: subdirectories that appear later are served too
  std::string default_model;  // empty: the first model
  // The exact model for in-process users; the server's --dtype flag defaults to auto.
  model_store::ComputeDType dtype = model_store::ComputeDType::kFloat32;
  // Where --dtype=auto keeps its choice per model content and CPU; empty: measure every load.
  std::string dtype_cache_dir;
  // Under --dtype=auto, a reload serves the new version in the dtype the old one was served in
  // (replicas and cached vectors keep agreeing) unless this is set (--reload-dtype=measure) or
  // the admin call asks (POST /admin/reload?dtype=measure).
  bool reload_measures_dtype = false;
  int intra_op_threads = 0;  // 0: all cores
  model_store::ComputeDevice device;  // --device, resolved at start
  // On a GPU, the share of its memory the server may use, weights and forward passes together
  // (--gpu_memory_utilization, vLLM's name and default); batches are sized from what is left
  // (batch_budget.h).
  double gpu_memory_utilization = 0.9;
  // --max_input_length: lowers every model's window (0: each model's own); see model.h.
  int64_t max_input_length = 0;
  // Loaded versions per model after a reload: the current one and those before it, for
  // "name@version" (--model-versions-kept).
  size_t versions_kept = 2;
  // How often model directories are checked for a new version; zero: only on an admin call.
  absl::Duration poll_interval = absl::Seconds(30);
};

struct RequestLimits {
  int64_t max_concurrent_requests = 256;
  int64_t max_queued_tokens = 1 << 20;
  uint32_t max_inputs_per_request = 512;
  int64_t max_request_bytes = 32 << 20;
  // What one response may carry, estimated from the tokens before any forward pass
  // (multi-vectors dominate: 4 KB per token at width 1,024 in fp32).
  int64_t max_response_bytes = 64 << 20;
  uint32_t max_tokens_per_document = 131072;
  float min_temperature = 0.05f;
  float max_temperature = 4.0f;
  float default_temperature = 1.0f;
  Strategy default_strategy = Strategy::kChunkMean;
};

}  // namespace embedding::server
