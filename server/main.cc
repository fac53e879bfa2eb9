// embedding_server: serves the EmbeddingService over gRPC. Starts NOT_SERVING, loads the
// models, turns SERVING; on SIGTERM/SIGINT turns NOT_SERVING, refuses new calls, lets
// in-flight work finish within --drain-timeout-s, and exits 0.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/admission.h"
#include "server/embedding_service.h"
#include "server/http_endpoint.h"
#include "server/log_throttle.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/model_reloader.h"
#include "server/openai_endpoint.h"
#include "server/server_log.h"
#include "server/server_options.h"
#include "server/tls_credentials.h"
#include "server/worker_pool.h"

namespace embedding::server {
namespace {

constexpr char kServiceName[] = "embedding.v1.EmbeddingService";

void SetHealth(grpc::Server* server, bool serving) {
  auto* health = server->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

// "<listener> listening on HOST:PORT" on stdout, where test runners and scripts read it: the
// host as the flag gave it, the port as bound (the flag may ask for port 0).
void LogListening(const char* listener, const std::string& address, int port) {
  ServerLog(LogLevel::kInfo,
            absl::StrCat(listener, " listening on ", address.substr(0, address.rfind(':')), ":",
                         port),
            std::cout);
}

// A reload that found something: what serves now, or why the new version was refused.
void LogReload(const ReloadOutcome& outcome) {
  if (outcome.result == ReloadOutcome::Result::kLoaded) {
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", outcome.model, "' ",
                           outcome.new_model ? "added from --model-store" : "reloaded",
                           ": version ", outcome.version, " serving"));
  } else if (outcome.result == ReloadOutcome::Result::kFailed && outcome.new_model) {
    ServerLog(LogLevel::kError, absl::StrCat("model '", outcome.model,
                                             "' in --model-store refused: ", outcome.error));
  } else if (outcome.result == ReloadOutcome::Result::kFailed) {
    ServerLog(LogLevel::kError,
              absl::StrCat("model '", outcome.model, "': new version refused: ", outcome.error,
                           "; version ", outcome.version, " keeps serving"));
  }
}

int Run(int argc, char** argv) {
  // Block the stop signals before any thread exists, so only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // oneDNN keeps a compiled kernel per shape (1,024 by default), and each holds its own
  // scratch memory: 40 mixed documents on a MiniLM-shaped model grew the fp32 server by 180 MiB
  // against 69-96 MiB at 64, at the same speed (the encoder rounds its shapes so they repeat).
  // Read when oneDNN first runs, so set before any model loads; the environment may override.
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64", /*overwrite=*/0);
  ThrottleProtobufLogs();

  auto options = ParseServerOptions(argc, argv);
  if (!options.ok()) {
    ServerLog(LogLevel::kError, options.status().message());
    return 2;
  }
  auto log_format = ParseLogFormat(options->log_format);
  auto log_level = ParseRequestLogLevel(options->log_requests);
  for (const absl::Status& bad : {log_format.status(), log_level.status()}) {
    if (!bad.ok()) {
      ServerLog(LogLevel::kError, bad.message());
      return 2;
    }
  }
  SetServerLogFormat(*log_format);
  if (options->models.intra_op_threads == 0)
    options->models.intra_op_threads = static_cast<int>(std::thread::hardware_concurrency());

  Admission admission(options->limits.max_concurrent_requests, options->limits.max_queued_tokens);
  auto pool = std::make_unique<WorkerPool>(options->tokenizer_threads);
  // Every model call, loading included, runs on this one thread. LibTorch parallelises through
  // libgomp, which gives each thread that starts parallel work its own pool of threads and,
  // once pooled threads outnumber the CPUs, cuts their spin-waits to almost nothing: with the
  // model loaded on main and run on a batcher thread, a 128-token MiniLM-shaped forward took
  // 105-121 ms against 27-29 ms with both on one thread (tests/bench/encoder_bench measures
  // the latter). Outlives the registry, whose batchers call into it.
  WorkerPool inference(1);
  Metrics metrics(static_cast<size_t>(options->collapse_window));
  metrics.SetGaugeSources([&admission] { return admission.queued_tokens(); },
                          [&admission] { return admission.in_flight_requests(); });
  metrics.SetLimits(options->limits.max_queued_tokens, options->limits.max_concurrent_requests);
  std::unique_ptr<BearerAuth> auth;
  if (!options->auth_token_file.empty()) {
    auto loaded = BearerAuth::Load(options->auth_token_file);
    if (!loaded.ok()) {
      ServerLog(LogLevel::kError, loaded.status().message());
      return 2;
    }
    auth = *std::move(loaded);
  }
  RequestLog request_log(*log_format, *log_level, &std::cerr);
  ServiceObserver hooks = metrics.ServiceHooks();
  hooks.on_rpc_done = [metrics_hook = hooks.on_rpc_done, &request_log](const CallRecord& call) {
    metrics_hook(call);
    request_log.Record(call);
  };
  EmbeddingService service(*options, pool.get(), &admission, hooks, auth.get());

  grpc::EnableDefaultHealthCheckService(true);
  if (options->reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, so a second server on the same port started and took
  // half the calls with other models. A port in use is a start-up error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  auto credentials = GrpcServerCredentials(options->tls);
  if (!credentials.ok()) {
    ServerLog(LogLevel::kError, credentials.status().message());
    return 2;
  }
  builder.AddListeningPort(options->grpc_listen, *credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<int64_t>(options->limits.max_request_bytes + (4 << 20), INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    ServerLog(LogLevel::kError, absl::StrCat("cannot listen on --listen=", options->grpc_listen));
    return 1;
  }
  SetHealth(server.get(), false);
  LogListening("grpc", options->grpc_listen, port);

  std::atomic<bool> serving{false};
  // Ready while serving, unless admission's books say the server would refuse work forever.
  std::atomic<bool> reported_inconsistent{false};
  auto ready = [&serving, &admission, &reported_inconsistent] {
    if (!serving.load()) return false;
    const absl::Status consistent = admission.Consistency();
    if (!consistent.ok() && !reported_inconsistent.exchange(true))
      ServerLog(LogLevel::kError, absl::StrCat("not ready: ", consistent.message()));
    return consistent.ok();
  };
  std::unique_ptr<HttpTlsCertificate> http_tls;
  if (options->tls.http) {
    auto loaded = HttpTlsCertificate::Load(options->tls);
    if (!loaded.ok()) {
      ServerLog(LogLevel::kError, loaded.status().message());
      server->Shutdown();
      return 2;
    }
    http_tls = *std::move(loaded);
  }
  std::unique_ptr<HttpEndpoint> http;
  if (!options->http_listen.empty()) {
    HttpEndpointOptions http_options;
    http_options.address = options->http_listen;
    http_options.metrics = &metrics;
    http_options.serving = ready;
    http_options.auth = auth.get();
    http_options.auth_metrics = options->auth_metrics;
    http_options.tls = http_tls.get();
    auto started = HttpEndpoint::Start(std::move(http_options));
    if (!started.ok()) {
      ServerLog(LogLevel::kError, started.status().message());
      server->Shutdown();
      return 1;
    }
    http = *std::move(started);
    LogListening("http", options->http_listen, http->port());
  }

  ModelRegistry::VersionObserver versions;
  versions.on_serving = [&metrics](const ServedModel& model, bool current) {
    metrics.SetModelInfo(model, current);
  };
  versions.on_unloaded = [&metrics](const ServedModel& model) {
    metrics.RemoveModelInfo(model);
    ServerLog(LogLevel::kInfo, absl::StrCat("model '", model.name, "' version ", model.version,
                                            " unloaded (replaced, and no request holds it)"));
  };
  std::unique_ptr<OpenAiEndpoint> openai;
  if (!options->openai_listen.empty()) {
    OpenAiEndpointOptions openai_options;
    openai_options.address = options->openai_listen;
    openai_options.service = &service;
    openai_options.auth = auth.get();
    openai_options.tls = http_tls.get();
    openai_options.limits = options->limits;
    openai_options.default_timeout = options->openai_timeout;
    auto started = OpenAiEndpoint::Start(std::move(openai_options));
    if (!started.ok()) {
      ServerLog(LogLevel::kError, started.status().message());
      server->Shutdown();
      return 1;
    }
    openai = *std::move(started);
    LogListening("openai", options->openai_listen, openai->port());
  }

  auto registry = ModelRegistry::Load(
      options->models, options->batching, &inference,
      [pool = pool.get()](std::function<void()> work) { pool->Schedule(std::move(work)); },
      [&metrics](const ServedModel& model) { return metrics.BatchHook(model.name); },
      versions);
  if (!registry.ok()) {
    ServerLog(LogLevel::kError, registry.status().message());
    server->Shutdown();
    return 1;
  }
  for (const auto& m : (*registry)->Current()) {
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", m->name, "' version ", m->version, " (",
                           m->model->config().model_type, ", ", m->model->config().hidden_size,
                           " dims, window ", m->model->max_content_tokens(), " tokens, ",
                           model_store::ComputeDTypeName(m->model->encoder().dtype()), ")",
                           m->model->is_demo() ? " -- DEMO model: random weights, vectors are "
                                                 "not semantically meaningful"
                                               : ""));
  }
  for (const auto& m : (*registry)->Current()) {
    for (const auto& trial : m->model->dtype_trials()) {
      ServerLog(
          LogLevel::kInfo,
          absl::StrCat("model '", m->name, "' --dtype=auto tried ",
                       model_store::ComputeDTypeName(trial.dtype), ": ",
                       trial.unavailable.empty()
                           ? absl::StrCat("cosine to fp32 ", trial.min_cosine, " (guard ",
                                          model_store::AccuracyGuard(trial.dtype), "), ",
                                          static_cast<int64_t>(trial.tokens_per_second),
                                          " tokens/s", trial.passed ? "" : ", failed its guard")
                           : trial.unavailable));
    }
  }
  auto reloader = std::make_unique<ModelReloader>(
      registry->get(), options->models.poll_interval, [&metrics](const ReloadOutcome& outcome) {
        metrics.ObserveReload(outcome.model, ReloadResultName(outcome.result));
        LogReload(outcome);
      });
  if (http) http->SetReloader(reloader.get());
  service.SetReady(registry->get());
  SetHealth(server.get(), true);
  serving.store(true);
  ServerLog(LogLevel::kInfo, "ready", std::cout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  ServerLog(LogLevel::kInfo, absl::StrCat("signal ", signal, ", draining"));
  SetHealth(server.get(), false);
  serving.store(false);
  service.StartDraining();
  const absl::Time give_up = absl::Now() + options->drain_timeout;
  while (service.active_calls() > 0 && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(20));
  if (service.active_calls() > 0)
    ServerLog(LogLevel::kWarning,
              absl::StrCat("drain timeout with ", service.active_calls(), " calls left"));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  // Every call is finished, so nothing new is prepared. Let what was scheduled reach the
  // batchers, then stop them (what is left fails with UNAVAILABLE), then run the last
  // completions they posted.
  pool->WaitIdle();
  // Then the HTTP side (its handlers finish) and the reloader, before the registry they use.
  openai.reset();
  http.reset();
  reloader.reset();
  registry->reset();
  pool.reset();
  ServerLog(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace
}  // namespace embedding::server

int main(int argc, char** argv) { return embedding::server::Run(argc, argv); }
