#include "server/app/server.h"

#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/app/model_events.h"
#include "server/grpc/tls_credentials.h"
#include "server/observability/server_log.h"

namespace embedding::server {
namespace {

// "<listener> listening on HOST:PORT" on stdout, where test runners and scripts read it: the
// host as the flag gave it, the port as bound (the flag may ask for port 0).
void LogListening(const char* listener, const std::string& address, int port) {
  ServerLog(
      LogLevel::kInfo,
      absl::StrCat(listener, " listening on ", address.substr(0, address.rfind(':')), ":", port),
      std::cout);
}

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)), metrics_(static_cast<size_t>(options_.collapse_window)) {}

Server::~Server() = default;

absl::StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options) {
  ASSIGN_OR_RETURN(LogFormat log_format, ParseLogFormat(options.log_format));
  ASSIGN_OR_RETURN(RequestLogLevel log_level, ParseRequestLogLevel(options.log_requests));
  SetServerLogFormat(log_format);
  if (options.models.intra_op_threads == 0)
    options.models.intra_op_threads = static_cast<int>(std::thread::hardware_concurrency());
  std::unique_ptr<Server> server(new Server(std::move(options)));
  const ServerOptions& opts = server->options_;
  if (!opts.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(server->auth_,
                     BearerAuth::Load(opts.auth_token_file, [](absl::string_view message) {
                       ServerLog(LogLevel::kWarning, message);
                     }));
  }
  ASSIGN_OR_RETURN(server->grpc_credentials_, GrpcServerCredentials(opts.tls));
  if (opts.tls.http) {
    ASSIGN_OR_RETURN(server->http_tls_, HttpTlsCertificate::Load(opts.tls));
  }
  if (!opts.batch.store.dir.empty()) {
    if (opts.openai_listen.empty())
      return absl::InvalidArgumentError("--batch_dir: needs --openai-listen (its routes)");
    ASSIGN_OR_RETURN(server->batch_store_, BatchStore::Open(opts.batch.store));
  }

  server->request_log_ = std::make_unique<RequestLog>(log_format, log_level, &std::cerr);
  server->pool_ = std::make_unique<WorkerPool>(opts.tokenizer_threads);
  server->inference_ = std::make_unique<WorkerPool>(1);
  server->embedder_ = std::make_unique<Embedder>(
      opts.limits, server->pool_.get(),
      std::vector<CallObserver>{server->metrics_.CallHooks(), server->request_log_->Hooks()});
  const Admission& admission = server->embedder_->admission();
  server->metrics_.SetGaugeSources([&admission] { return admission.queued_tokens(); },
                                   [&admission] { return admission.in_flight_requests(); });
  server->metrics_.SetLimits(opts.limits.max_queued_tokens, opts.limits.max_concurrent_requests);
  if (const model_store::ComputeDevice device = opts.models.device; device.cuda) {
    const std::string name = model_store::ComputeDeviceName(device);
    server->metrics_.SetDeviceMemorySource(
        name, [device] { return model_store::ReadDeviceMemory(device); });
    auto nvml = NvmlUtilization::Open(model_store::DevicePciBusId(device));
    if (nvml.ok()) {
      server->nvml_ = std::move(*nvml);
      server->metrics_.SetDeviceUtilizationSource(
          name, [nvml = server->nvml_.get()] { return nvml->Read(); });
    } else {
      ServerLog(LogLevel::kInfo,
                absl::StrCat("GPU utilisation is not exported: ", nvml.status().message()));
    }
  }
  return server;
}

absl::Status Server::Start() {
  RETURN_IF_ERROR(StartListeners());
  RETURN_IF_ERROR(LoadModels());
  embedder_->SetReady(registry_.get());
  grpc_->SetServing(true);
  serving_.store(true);
  ServerLog(LogLevel::kInfo, "ready", std::cout);
  return absl::OkStatus();
}

absl::Status Server::StartListeners() {
  ASSIGN_OR_RETURN(const ApiDocs docs, ApiDocs::Load(options_.api_docs_dir));
  service_ = std::make_unique<EmbeddingService>(embedder_.get(), auth_.get());
  GrpcListenerOptions grpc_options{options_.grpc_listen, options_.limits.max_request_bytes,
                                   options_.reflection, grpc_credentials_};
  ASSIGN_OR_RETURN(grpc_, GrpcListener::Start(grpc_options, service_.get()));
  LogListening("grpc", options_.grpc_listen, grpc_->port());

  if (!options_.http_listen.empty()) {
    HttpEndpointOptions http_options;
    http_options.address = options_.http_listen;
    http_options.metrics = &metrics_;
    http_options.serving = [this] { return Ready(); };
    http_options.auth = auth_.get();
    http_options.auth_metrics = options_.auth_metrics;
    http_options.tls = http_tls_.get();
    http_options.docs = docs;
    ASSIGN_OR_RETURN(http_, HttpEndpoint::Start(std::move(http_options)));
    LogListening("http", options_.http_listen, http_->port());
  }
  if (!options_.openai_listen.empty()) {
    ApiEndpointOptions api_options;
    api_options.address = options_.openai_listen;
    api_options.context = {embedder_.get(), auth_.get(), options_.openai_timeout};
    api_options.tls = http_tls_.get();
    api_options.docs = docs;
    api_options.tei_info = {options_.batching.max_batch_sequences, options_.tokenizer_threads};
    if (batch_store_) {
      // Lines that find the models still loading wait (UNAVAILABLE runs them again).
      batch_runner_ = std::make_unique<BatchRunner>(batch_store_.get(), embedder_.get(),
                                                    &metrics_, options_.batch.runner);
      batch_api_ = std::make_unique<BatchApi>(batch_store_.get(), batch_runner_.get(),
                                              api_options.context);
      api_options.more_routes = [api = batch_api_.get()](HttpListener& l) { api->AddRoutes(l); };
    }
    ASSIGN_OR_RETURN(api_, ApiEndpoint::Start(std::move(api_options)));
    LogListening("openai", options_.openai_listen, api_->port());
  }
  return absl::OkStatus();
}

absl::Status Server::LoadModels() {
  const ModelEvents events(&metrics_);
  ASSIGN_OR_RETURN(registry_,
                   ModelRegistry::Load(
                       options_.models, options_.batching, inference_.get(), pool_.get(),
                       [this](const ServedModel& model) { return metrics_.BatchHook(model.name); },
                       events.VersionObserver()));
  reloader_ = std::make_unique<ModelReloader>(registry_.get(), options_.models.poll_interval,
                                              options_.models.reload_measures_dtype,
                                              events.ReloadObserver());
  if (http_) http_->SetReloader(reloader_.get());
  return absl::OkStatus();
}

bool Server::Ready() {
  if (!serving_.load()) return false;
  const absl::Status consistent = embedder_->admission().Consistency();
  if (!consistent.ok() && !reported_inconsistent_.exchange(true))
    ServerLog(LogLevel::kError, absl::StrCat("not ready: ", consistent.message()));
  return consistent.ok();
}

void Server::Drain() {
  if (grpc_) grpc_->SetServing(false);
  serving_.store(false);
  embedder_->StartDraining();
  // Logged after the switch, so a call sent after this line's time is refused.
  ServerLog(LogLevel::kInfo, "draining: new calls are refused");
  const absl::Time give_up = absl::Now() + options_.drain_timeout;
  while (embedder_->active_calls() > 0 && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(20));
  if (embedder_->active_calls() > 0) {
    ServerLog(LogLevel::kWarning,
              absl::StrCat("drain timeout with ", embedder_->active_calls(), " calls left"));
  }
  if (grpc_) grpc_->Shutdown(absl::Seconds(1));
  // Every call is finished, so nothing new is prepared. Let what was scheduled reach the
  // batchers; destruction then stops them (what is left fails with UNAVAILABLE) and runs the
  // last completions they posted.
  pool_->WaitIdle();
}

}  // namespace embedding::server
