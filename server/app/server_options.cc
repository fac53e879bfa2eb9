#include "server/app/server_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/command_line.h"
#include "common/status_macros.h"
#include "model_store/formats/tempscale_schedule.h"
#include "model_store/hub/hub_reference.h"
#include "model_store/hub/hub_settings.h"
#include "model_store/kernels/compute_device.h"
#include "nlohmann/json.hpp"
#include "server/core/store_watcher.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC address (port 0 picks a free port).");
// Off by default: a listener of its own, so large bodies and slow API clients never share
// workers or a body limit with the probes and /metrics (docs/apis.md, "The OpenAI-compatible
// endpoint").
ABSL_FLAG(std::string, openai_listen, "",
          "host:port for the OpenAI-compatible POST /v1/embeddings and GET /v1/models "
          "(empty: off).");
// 5 minutes: a 131,072-token document at fp32 on BERT-base takes about a minute here.
ABSL_FLAG(double, openai_timeout_s, 300,
          "Deadline of an OpenAI-endpoint request that sends no X-Request-Timeout header.");
// The page is off unless its files are there: they come from npm, not from Debian (the image
// carries them; docs/apis.md).
ABSL_FLAG(std::string, api_docs_dir, "",
          "Folder of npm's swagger-ui-dist: serve GET /docs, Swagger UI rendering "
          "/openapi.json, on both HTTP listeners (empty: /openapi.json only).");
ABSL_FLAG(std::string, http_listen, "0.0.0.0:8080",
          "HTTP address for /metrics, /healthz and /readyz; empty disables.");
ABSL_FLAG(std::string, tls_cert_file, "", "PEM certificate chain for TLS on the gRPC listener.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key for --tls-cert-file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle: require client certificates it signed (mTLS).");
ABSL_FLAG(bool, http_tls, false,
          "Serve the HTTP listener (/metrics, probes, /admin) over TLS with --tls-cert-file and "
          "--tls-key-file (no client certificates: probes and scrapers present none).");
// 60 s: a rotated certificate is in use within a minute; each check is one stat per file.
ABSL_FLAG(uint32_t, tls_reload_interval_s, 60,
          "How often the TLS files are checked for changes (they reload without a restart).");
ABSL_FLAG(std::string, auth_token_file, "",
          "File of bearer tokens, one per line, re-read when it changes; every RPC but health "
          "must then carry 'authorization: Bearer <token>'. Empty: no authentication.");
ABSL_FLAG(bool, auth_metrics, false, "Also require the bearer token on /metrics.");
ABSL_FLAG(bool, reflection, true, "Serve gRPC server reflection.");
ABSL_FLAG(std::string, log_format, "text", "text | json: the request log's line format.");
// errors by default: a line per failed call (rate-limited) says what went wrong and for whom
// without a line per success on a busy server.
ABSL_FLAG(std::string, log_requests, "errors",
          "off | errors | all: which finished RPCs get a log line (with their request id).");
// Declared so that --help and docs/cli.md list it; its values never reach absl: TakeModelFlags
// takes every --model (it repeats, which absl flags do not) before absl parses the rest.
ABSL_FLAG(std::vector<std::string>, model, {},
          "[NAME=]DIR or [NAME=]ORG/REPO[@REVISION], repeatable: a model directory (or its "
          "versions' parent) or a Hugging Face repository served from the cache; NAME defaults "
          "to the directory's or repository's name. env EMBEDDING_MODELS, comma-separated.");
// Taken out of argv like --model (a JSON object holds commas, so the flag repeats instead).
ABSL_FLAG(std::vector<std::string>, hf_overrides, {},
          "[NAME=]JSON, repeatable: a JSON object whose keys replace model NAME's config.json "
          "keys, as vLLM's --hf-overrides; NAME may be left out when one model is served. "
          "Qwen3-Reranker: {\"architectures\": [\"Qwen3ForSequenceClassification\"], "
          "\"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true}. "
          "env EMBEDDING_HF_OVERRIDES: one [NAME=]JSON.");
ABSL_FLAG(std::string, model_store, "",
          "Directory whose subdirectories are models, each served under its directory name.");
ABSL_FLAG(std::string, default_model, "", "Model used when a request names none.");
ABSL_FLAG(std::string, tempscale_schedule, "",
          "NAME=FILE[,NAME=FILE...]: serve model NAME with the TempScale schedule in FILE (as "
          "embedctl calibrate --schedule-out writes it) instead of its directory's "
          "tempscale.json; for a Hub model, whose cache the server does not write.");
ABSL_FLAG(std::string, hub_cache_dir, "",
          "Hugging Face cache for --model=ORG/NAME[@REVISION]; empty: HF_HUB_CACHE, "
          "HUGGINGFACE_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, "
          "~/.cache/huggingface/hub.");
ABSL_FLAG(bool, hub_offline, false,
          "Hub models from the cache only, with no network call (HF_HUB_OFFLINE=1 too).");
ABSL_FLAG(std::string, hub_ca_bundle, "",
          "PEM trust roots for the Hub's TLS (a corporate proxy); default CURL_CA_BUNDLE, then "
          "the system's.");
// 30 s: a new version serves within a minute of landing (it must look the same at two checks
// in a row, so a half-copied directory is not loaded), and a check only lists files.
ABSL_FLAG(double, model_poll_interval_s, 30.0,
          "How often model directories are checked for a new version (0: only on POST "
          "/admin/reload).");
// 2: the previous version stays loaded after a reload, selectable as NAME@VERSION (a quick
// way back, and a peer for comparing vectors), at the cost of its memory.
ABSL_FLAG(int, model_versions_kept, 2,
          "Loaded versions per model after a reload, the current one included.");
// auto by default: the CPU decides. On one Xeon bf16 was 2.4x fp32 and on another int8 led,
// so no fixed dtype is fast everywhere; auto measures once per model content and CPU (its
// accuracy guards are in model_store/dtype/dtype_choice.h) and later starts read the choice back.
// Name a dtype to pin it.
ABSL_FLAG(std::string, dtype, "auto",
          "fp32 | bf16 | fp16 | int8 | auto. bf16 needs avx512_bf16 or amx_bf16 on a CPU; fp16 "
          "runs on a GPU only; int8 quantises the linear layers dynamically (CPU only); auto "
          "picks the fastest that keeps its accuracy guard, and bf16 on a GPU.");
// auto: a GPU where there is one, as TEI and vLLM do (docs/deploying.md, "On a GPU").
ABSL_FLAG(std::string, device, "auto",
          "cpu | cuda | cuda:N | auto. Where forward passes run; auto takes CUDA device 0 when "
          "this build's LibTorch has CUDA and one is visible, else the CPU.");
ABSL_FLAG(std::string, dtype_cache_dir, "",
          "Where --dtype=auto keeps its measured choice, per model content and CPU; default "
          "$XDG_CACHE_HOME/embedding-server, else $HOME/.cache/embedding-server. off: measure "
          "at every load.");
// keep: a reload must not change what vectors the same text gets unless the operator asks
// (caches, indexes and the other replicas hold vectors of the serving dtype).
ABSL_FLAG(std::string, reload_dtype, "keep",
          "keep | measure. Under --dtype=auto, a reloaded model keeps the dtype its serving "
          "version was in (keep), or auto measures it afresh (measure; POST "
          "/admin/reload?dtype=measure does so once).");
ABSL_FLAG(int64_t, max_input_length, 0,
          "Tokens one window holds, special tokens included; 0: each model's own (its position "
          "table, or sentence-transformers' max_seq_length when lower). May only lower it.");
ABSL_FLAG(int, threads, 0, "torch intra-op threads; 0 uses every core.");
ABSL_FLAG(int, tokenizer_threads, 2, "Threads that tokenise and plan requests.");
// 0: sized per device (server/core/batch_budget.h gives the reasons).
ABSL_FLAG(int64_t, max_batch_tokens, 0,
          "Padded tokens per forward pass. 0: 2048 on the CPU; on a GPU what its memory holds "
          "at the model's cost per token measured at load, at most 65536.");
// vLLM's flag and default: the other 10% is for the CUDA context, other processes and the
// allocator's fragmentation.
ABSL_FLAG(double, gpu_memory_utilization, 0.9,
          "On a GPU, the share of its memory the server may use (weights and forward passes); "
          "in (0, 1].");
ABSL_FLAG(int64_t, max_batch_sequences, 64, "Sequences per forward pass.");
ABSL_FLAG(double, max_batch_padding, 0.2,
          "Largest share of a forward pass's padded tokens that may be padding.");
// 0: on an idle server the old 2 ms wait was 2 of a 5.5 ms request (tiny model), and under
// load (MiniLM-shaped, bf16, concurrency 8) 0 and 2 ms ran within noise (19,973-20,690
// against 18,003-20,288 tokens/s) with p50 72-75 ms against 82-87 ms.
ABSL_FLAG(double, max_queue_delay_ms, 0, "Longest wait for a batch to fill.");
ABSL_FLAG(int64_t, max_concurrent_requests, 256, "Requests in flight before RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_queued_tokens, 1 << 20, "Queued tokens before RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint32_t, max_inputs_per_request, 512, "Inputs in one request.");
ABSL_FLAG(int64_t, max_request_bytes, 32 << 20, "Bytes of text in one request.");
ABSL_FLAG(uint32_t, max_tokens_per_document, 131072, "Tokens in one document.");
// 64 MiB: two 8,192-token documents' multi-vectors at width 1,024 in fp32, or 16 in int8.
ABSL_FLAG(int64_t, max_response_bytes, 64 << 20,
          "Bytes one response may carry, estimated before any forward pass.");
ABSL_FLAG(double, min_temperature, 0.05, "Smallest accepted temperature.");
ABSL_FLAG(double, max_temperature, 4.0, "Largest accepted temperature.");
ABSL_FLAG(double, default_temperature, 1.0, "Temperature when a request sets none.");
ABSL_FLAG(std::string, default_strategy, "chunk_mean",
          "reject | truncate | chunk_mean | chunk_weighted_mean | chunk_max | chunk_all | "
          "late_chunking");
// The Batch API (docs/apis.md, "Batch jobs"): off unless a folder is given, since it writes
// there; on a persistent volume a batch survives its pod (docs/deploying.md).
ABSL_FLAG(std::string, batch_dir, "",
          "Folder of the Batch API's files and jobs (POST /v1/files, /v1/batches on "
          "--openai-listen); empty: the Batch API is off.");
// 64 MiB: 50,000 lines of about 1.3 KiB each, OpenAI's own line cap, fits.
ABSL_FLAG(int64_t, batch_max_file_bytes, 64 << 20, "Largest Batch API upload, in bytes.");
ABSL_FLAG(int64_t, batch_max_lines, 50000, "Most lines (requests) in one Batch API file.");
ABSL_FLAG(int64_t, batch_max_stored_bytes, 4LL << 30,
          "Most bytes the --batch-dir files may hold in all (uploads and results).");
ABSL_FLAG(int, batch_max_active, 4, "Most Batch API jobs not yet ended (the rest get 429).");
ABSL_FLAG(double, batch_retention_h, 720,
          "Hours a Batch API file (input or result) and an ended job are kept.");
// 1: a line's forward pass is what an interactive call that arrives meanwhile waits for, and
// a second line in flight doubles that wait without adding throughput
// (tests/bench/batch_interference_bench.py: 2 gave 183-191 lines/s and an interactive p99 of
// 1.9-15.7x; 1 gave 212-217 lines/s and 0.8-1.7x, tiny model, 2 cores).
ABSL_FLAG(int, batch_lines_in_flight, 1, "Batch API lines run at once, while the server is idle.");
ABSL_FLAG(double, drain_timeout_s, 30.0, "On SIGTERM, how long in-flight work may take.");
ABSL_FLAG(int, collapse_window, 512,
          "W: the most recent document vectors per collapse-metric series (model, length "
          "bucket, tempscale).");

namespace embedding::server {
namespace {

// A path no repository id can be: absolute, relative to "." or "~", or with two '/' or more.
bool PathLike(const std::string& location) {
  return location.front() == '/' || location.front() == '.' || location.front() == '~' ||
         std::count(location.begin(), location.end(), '/') > 1;
}

// NAME=DIR, DIR, NAME=ORG/REPO[@REVISION] or ORG/REPO[@REVISION]. A path, or what exists as a
// directory, is a directory; anything else must be a Hub repository id (fetched into the cache).
absl::StatusOr<ModelSource> ParseModelSource(absl::string_view spec) {
  std::pair<std::string, std::string> parts = absl::StrSplit(spec, absl::MaxSplits('=', 1));
  std::error_code ec;
  const std::string& location = parts.second.empty() ? parts.first : parts.second;
  if (!location.empty() && !PathLike(location) && !std::filesystem::is_directory(location, ec)) {
    auto hub = model_store::ParseHubReference(location, absl::StrCat("--model=", spec));
    if (!hub.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(hub.status().message(), "; and no directory ", location, " exists"));
    }
    ModelSource source;
    // A bare repository id is served under its name: "BAAI/bge-m3@v1" as "bge-m3".
    source.name =
        parts.second.empty() ? std::filesystem::path(hub->repo).filename().string() : parts.first;
    if (source.name.empty() || source.name.find('@') != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("--model=", spec, ": NAME may not hold '@'"));
    source.hub = *std::move(hub);
    return source;
  }
  if (parts.second.empty()) {
    // A bare directory is served under its directory name.
    parts.second = parts.first;
    parts.first = std::filesystem::path(parts.first).filename().string();
    if (parts.first.empty())
      parts.first = std::filesystem::path(parts.second).parent_path().filename().string();
  }
  if (parts.first.empty() || parts.second.empty())
    return absl::InvalidArgumentError(absl::StrCat("--model=", spec, ": expected NAME=DIR or DIR"));
  if (parts.first.find('@') != std::string::npos)  // '@' selects a version: NAME@VERSION
    return absl::InvalidArgumentError(absl::StrCat("--model=", spec, ": NAME may not hold '@'"));
  ModelSource source;
  source.name = parts.first;
  source.directory = parts.second;
  return source;
}

// --dtype-cache-dir: the flag, else the user's cache directory; "off" (or no home) keeps
// nothing.
std::string DTypeCacheDir(const std::string& flag) {
  if (flag == "off") return "";
  if (!flag.empty()) return flag;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return absl::StrCat(xdg, "/embedding-server");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return absl::StrCat(home, "/.cache/embedding-server");
  return "";
}

absl::Status Positive(const char* flag, double value) {
  if (value > 0 && std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": must be > 0"));
}

// Takes every --model out of argv (absl flags do not repeat) into `sources`, with the
// EMBEDDING_MODELS fallback; returns the rest of argv for absl.
absl::StatusOr<std::vector<char*>> TakeModelFlags(std::vector<std::string>& normalized,
                                                  std::vector<ModelSource>* sources,
                                                  std::vector<std::string>* overrides) {
  std::vector<char*> rest;
  for (size_t i = 0; i < normalized.size(); ++i) {
    absl::string_view arg = normalized[i];
    if (arg.rfind("--hf_overrides=", 0) == 0) {
      overrides->emplace_back(arg.substr(15));
    } else if (arg == "--hf_overrides" && i + 1 < normalized.size()) {
      overrides->push_back(normalized[++i]);
    } else if (arg.rfind("--model=", 0) == 0) {
      ASSIGN_OR_RETURN(auto source, ParseModelSource(arg.substr(8)));
      sources->push_back(source);
    } else if (arg == "--model" && i + 1 < normalized.size()) {
      ASSIGN_OR_RETURN(auto source, ParseModelSource(normalized[++i]));
      sources->push_back(source);
    } else {
      rest.push_back(normalized[i].data());
    }
  }
  if (overrides->empty()) {  // one [NAME=]JSON: a JSON object holds the commas a list splits on
    if (const char* env = std::getenv("EMBEDDING_HF_OVERRIDES"); env != nullptr && *env != '\0')
      overrides->emplace_back(env);
  }
  if (sources->empty()) {
    if (const char* env = std::getenv("EMBEDDING_MODELS")) {
      for (absl::string_view spec : absl::StrSplit(env, ',', absl::SkipEmpty())) {
        ASSIGN_OR_RETURN(auto source, ParseModelSource(spec));
        sources->push_back(source);
      }
    }
  }
  return rest;
}

absl::Status ReadListenerFlags(ServerOptions* options) {
  options->grpc_listen = absl::GetFlag(FLAGS_listen);
  options->http_listen = absl::GetFlag(FLAGS_http_listen);
  options->openai_listen = absl::GetFlag(FLAGS_openai_listen);
  options->api_docs_dir = absl::GetFlag(FLAGS_api_docs_dir);
  const double openai_timeout = absl::GetFlag(FLAGS_openai_timeout_s);
  RETURN_IF_ERROR(Positive("openai_timeout_s", openai_timeout));
  options->openai_timeout = absl::Milliseconds(static_cast<int64_t>(openai_timeout * 1000));
  TlsOptions& tls = options->tls;
  tls.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  tls.key_file = absl::GetFlag(FLAGS_tls_key_file);
  tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  tls.reload_interval_s = absl::GetFlag(FLAGS_tls_reload_interval_s);
  tls.http = absl::GetFlag(FLAGS_http_tls);
  if (tls.reload_interval_s < 1)
    return absl::InvalidArgumentError("--tls_reload_interval_s: must be >= 1");
  options->auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  options->auth_metrics = absl::GetFlag(FLAGS_auth_metrics);
  options->reflection = absl::GetFlag(FLAGS_reflection);
  options->log_format = absl::GetFlag(FLAGS_log_format);
  options->log_requests = absl::GetFlag(FLAGS_log_requests);
  if (options->auth_metrics && options->auth_token_file.empty())
    return absl::InvalidArgumentError("--auth_metrics: needs --auth-token-file");
  const double drain = absl::GetFlag(FLAGS_drain_timeout_s);
  RETURN_IF_ERROR(Positive("drain_timeout_s", drain));
  options->drain_timeout = absl::Milliseconds(static_cast<int64_t>(drain * 1000));
  return absl::OkStatus();
}

absl::Status ReadBatchFlags(BatchJobOptions* batch) {
  BatchStoreOptions& store = batch->store;
  store.dir = absl::GetFlag(FLAGS_batch_dir);
  store.max_file_bytes = absl::GetFlag(FLAGS_batch_max_file_bytes);
  store.max_lines = absl::GetFlag(FLAGS_batch_max_lines);
  store.max_stored_bytes = absl::GetFlag(FLAGS_batch_max_stored_bytes);
  store.max_active = absl::GetFlag(FLAGS_batch_max_active);
  const double retention = absl::GetFlag(FLAGS_batch_retention_h);
  batch->runner.lines_in_flight = absl::GetFlag(FLAGS_batch_lines_in_flight);
  RETURN_IF_ERROR(Positive("batch_max_file_bytes", static_cast<double>(store.max_file_bytes)));
  RETURN_IF_ERROR(Positive("batch_max_lines", static_cast<double>(store.max_lines)));
  RETURN_IF_ERROR(Positive("batch_max_stored_bytes", static_cast<double>(store.max_stored_bytes)));
  RETURN_IF_ERROR(Positive("batch_max_active", store.max_active));
  RETURN_IF_ERROR(Positive("batch_retention_h", retention));
  RETURN_IF_ERROR(Positive("batch_lines_in_flight", batch->runner.lines_in_flight));
  // An upload is held in memory whole: past 1 GiB, memory, not the flag, would refuse it.
  if (store.max_file_bytes > (1LL << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch_max_file_bytes=", store.max_file_bytes, ": must be at most 1 GiB"));
  }
  store.retention = absl::Seconds(static_cast<int64_t>(retention * 3600));
  return absl::OkStatus();
}

// The source called `name`, or INVALID_ARGUMENT naming `item` and the served models.
absl::StatusOr<ModelSource*> SourceNamed(const std::vector<ModelSource>::iterator begin,
                                         const std::vector<ModelSource>::iterator end,
                                         const std::string& name, absl::string_view item) {
  auto source = std::find_if(begin, end, [&](const ModelSource& s) { return s.name == name; });
  if (source != end) return &*source;
  std::vector<std::string> names;
  for (auto it = begin; it != end; ++it) names.push_back(it->name);
  return absl::InvalidArgumentError(absl::StrCat(item, ": no served model '", name,
                                                 "' (served: ", absl::StrJoin(names, ", "), ")"));
}

// --hf_overrides: each [NAME=]JSON onto its model's source, checked to be a JSON object now.
absl::Status AttachOverrides(const std::vector<std::string>& items,
                             std::vector<ModelSource>* sources) {
  for (const std::string& item : items) {
    const std::string flag = absl::StrCat("--hf_overrides=", item.substr(0, 200));
    std::string name, text = item;
    if (!item.empty() && item[0] != '{') {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        return absl::InvalidArgumentError(absl::StrCat(flag, ": expected [NAME=]JSON"));
      name = item.substr(0, eq);
      text = item.substr(eq + 1);
    } else if (sources->size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", sources->size(), " models are served; name one as NAME=JSON"));
    } else {
      name = sources->front().name;
    }
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
      return absl::InvalidArgumentError(absl::StrCat(flag, ": not a JSON object"));
    ASSIGN_OR_RETURN(ModelSource * source,
                     SourceNamed(sources->begin(), sources->end(), name, flag));
    if (!source->hf_overrides.empty())
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": model '", name, "' has overrides already"));
    source->hf_overrides = parsed.dump();
  }
  return absl::OkStatus();
}

// --tempscale-schedule: each NAME=FILE onto its model's source, the file parsed now so that a
// bad one is refused at start naming the flag, not at the first load.
absl::Status AttachSchedules(const std::string& flag, std::vector<ModelSource>* sources) {
  for (absl::string_view item : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tempscale_schedule=", item, ": expected NAME=FILE"));
    }
    const std::string name(item.substr(0, eq)), file(item.substr(eq + 1));
    ASSIGN_OR_RETURN(ModelSource * source,
                     SourceNamed(sources->begin(), sources->end(), name,
                                 absl::StrCat("--tempscale_schedule=", item)));
    if (auto parsed = model_store::TempScaleSchedule::LoadFile(file); !parsed.ok()) {
      return absl::Status(parsed.status().code(), absl::StrCat("--tempscale_schedule=", item, ": ",
                                                               parsed.status().message()));
    }
    source->tempscale_schedule = file;
  }
  return absl::OkStatus();
}

absl::Status ReadModelFlags(const std::vector<std::string>& overrides, ModelOptions* models) {
  models->store = absl::GetFlag(FLAGS_model_store);
  if (!models->store.empty()) {
    ASSIGN_OR_RETURN(std::vector<ModelSource> found, ListStoreModels(models->store));
    models->sources.insert(models->sources.end(), found.begin(), found.end());
  }
  if (models->sources.empty())
    return absl::InvalidArgumentError("--model: at least one model is required (NAME=DIR)");
  const model_store::HubSettings hub = model_store::ResolveHubSettings(
      absl::GetFlag(FLAGS_hub_cache_dir), absl::GetFlag(FLAGS_hub_offline),
      absl::GetFlag(FLAGS_hub_ca_bundle));
  for (ModelSource& source : models->sources)
    if (source.hub) source.hub_settings = hub;
  models->default_model = absl::GetFlag(FLAGS_default_model);
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  const std::optional<model_store::ComputeDType> known_dtype =
      model_store::ComputeDTypeNamed(dtype);
  if (!known_dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype=", dtype, ": allowed ", model_store::ComputeDTypeNames()));
  }
  models->dtype = *known_dtype;
  const auto device = model_store::ResolveComputeDevice(absl::GetFlag(FLAGS_device));
  if (!device.ok()) return device.status();
  models->device = *device;
  if (models->dtype == model_store::ComputeDType::kFloat16 && !models->device.cuda) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype=fp16: runs on a CUDA device only, and --device resolved to ",
        model_store::ComputeDeviceName(models->device), "; allowed there: fp32, bf16, int8, auto"));
  }
  models->gpu_memory_utilization = absl::GetFlag(FLAGS_gpu_memory_utilization);
  if (!(models->gpu_memory_utilization > 0 && models->gpu_memory_utilization <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpu_memory_utilization=", models->gpu_memory_utilization, ": allowed (0, 1]"));
  }
  models->dtype_cache_dir = DTypeCacheDir(absl::GetFlag(FLAGS_dtype_cache_dir));
  const std::string reload_dtype = absl::GetFlag(FLAGS_reload_dtype);
  if (reload_dtype != "keep" && reload_dtype != "measure") {
    return absl::InvalidArgumentError(
        absl::StrCat("--reload_dtype=", reload_dtype, ": allowed keep, measure"));
  }
  models->reload_measures_dtype = reload_dtype == "measure";
  models->intra_op_threads = absl::GetFlag(FLAGS_threads);
  models->max_input_length = absl::GetFlag(FLAGS_max_input_length);
  if (models->max_input_length < 0 || models->max_input_length > (int64_t{1} << 31))
    return absl::InvalidArgumentError("--max_input_length: must be in [0, 2147483648]");
  const double poll = absl::GetFlag(FLAGS_model_poll_interval_s);
  if (!(poll >= 0 && poll <= 86400))
    return absl::InvalidArgumentError("--model_poll_interval_s: must be in [0, 86400]");
  models->poll_interval = absl::Milliseconds(static_cast<int64_t>(poll * 1000));
  const int kept = absl::GetFlag(FLAGS_model_versions_kept);
  if (kept < 1 || kept > 16)
    return absl::InvalidArgumentError("--model_versions_kept: must be in [1, 16]");
  models->versions_kept = static_cast<size_t>(kept);
  RETURN_IF_ERROR(AttachOverrides(overrides, &models->sources));
  return AttachSchedules(absl::GetFlag(FLAGS_tempscale_schedule), &models->sources);
}

absl::Status ReadBatchingFlags(BatcherOptions* batching) {
  batching->max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  batching->max_batch_sequences = absl::GetFlag(FLAGS_max_batch_sequences);
  const double delay_ms = absl::GetFlag(FLAGS_max_queue_delay_ms);
  if (!(delay_ms >= 0) || !std::isfinite(delay_ms))
    return absl::InvalidArgumentError("--max_queue_delay_ms: must be >= 0");
  batching->max_queue_delay = absl::Microseconds(static_cast<int64_t>(delay_ms * 1000));
  RETURN_IF_ERROR(Positive("max_batch_sequences", batching->max_batch_sequences));
  if (batching->max_batch_tokens < 0)
    return absl::InvalidArgumentError("--max_batch_tokens: must be >= 0 (0: sized per device)");
  batching->max_padding_share = absl::GetFlag(FLAGS_max_batch_padding);
  if (!(batching->max_padding_share >= 0 && batching->max_padding_share <= 1))
    return absl::InvalidArgumentError("--max_batch_padding: allowed [0, 1]");
  return absl::OkStatus();
}

absl::Status ReadLimitFlags(RequestLimits* limits) {
  limits->max_concurrent_requests = absl::GetFlag(FLAGS_max_concurrent_requests);
  limits->max_queued_tokens = absl::GetFlag(FLAGS_max_queued_tokens);
  limits->max_inputs_per_request = absl::GetFlag(FLAGS_max_inputs_per_request);
  limits->max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  limits->max_tokens_per_document = absl::GetFlag(FLAGS_max_tokens_per_document);
  limits->max_response_bytes = absl::GetFlag(FLAGS_max_response_bytes);
  RETURN_IF_ERROR(Positive("max_concurrent_requests", limits->max_concurrent_requests));
  RETURN_IF_ERROR(Positive("max_queued_tokens", limits->max_queued_tokens));
  RETURN_IF_ERROR(Positive("max_inputs_per_request", limits->max_inputs_per_request));
  RETURN_IF_ERROR(Positive("max_request_bytes", limits->max_request_bytes));
  RETURN_IF_ERROR(Positive("max_tokens_per_document", limits->max_tokens_per_document));
  RETURN_IF_ERROR(Positive("max_response_bytes", limits->max_response_bytes));
  limits->min_temperature = static_cast<float>(absl::GetFlag(FLAGS_min_temperature));
  limits->max_temperature = static_cast<float>(absl::GetFlag(FLAGS_max_temperature));
  limits->default_temperature = static_cast<float>(absl::GetFlag(FLAGS_default_temperature));
  RETURN_IF_ERROR(Positive("min_temperature", limits->min_temperature));
  if (!(limits->max_temperature >= limits->min_temperature) ||
      !std::isfinite(limits->max_temperature))
    return absl::InvalidArgumentError("--max_temperature: must be finite and >= --min_temperature");
  if (!(limits->default_temperature >= limits->min_temperature &&
        limits->default_temperature <= limits->max_temperature)) {
    return absl::InvalidArgumentError(absl::StrCat("--default_temperature: must lie in [",
                                                   limits->min_temperature, ", ",
                                                   limits->max_temperature, "]"));
  }
  ASSIGN_OR_RETURN(limits->default_strategy,
                   ParseStrategyName(absl::GetFlag(FLAGS_default_strategy), "--default_strategy"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerOptions> ParseServerOptions(int argc, char** argv) {
  ServerOptions options;
  std::vector<std::string> normalized = UnderscoreFlagNames(argc, argv);
  std::vector<std::string> overrides;
  ASSIGN_OR_RETURN(std::vector<char*> rest,
                   TakeModelFlags(normalized, &options.models.sources, &overrides));
  // Every flag of this file falls back to EMBEDDING_<FLAG>; the command line wins.
  RETURN_IF_ERROR(ApplyEnvironmentFallbacks("EMBEDDING", "server/app/server_options.cc"));
  absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  RETURN_IF_ERROR(ReadModelFlags(overrides, &options.models));
  RETURN_IF_ERROR(ReadListenerFlags(&options));
  RETURN_IF_ERROR(ReadBatchFlags(&options.batch));
  RETURN_IF_ERROR(ReadBatchingFlags(&options.batching));
  RETURN_IF_ERROR(ReadLimitFlags(&options.limits));
  options.tokenizer_threads = absl::GetFlag(FLAGS_tokenizer_threads);
  RETURN_IF_ERROR(Positive("tokenizer_threads", options.tokenizer_threads));
  options.collapse_window = absl::GetFlag(FLAGS_collapse_window);
  if (options.collapse_window < 2)
    return absl::InvalidArgumentError("--collapse_window: must be >= 2");
  return options;
}

}  // namespace embedding::server
