#include "client/embedding_client.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace embedding::client {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& field, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const ClientOptions& o) {
  if (!o.tls && o.ca_cert_file.empty() && o.client_cert_file.empty() && o.client_key_file.empty())
    return grpc::InsecureChannelCredentials();
  if (o.client_cert_file.empty() != o.client_key_file.empty())
    return absl::InvalidArgumentError("client_cert_file: mTLS needs both a certificate and a key");
  grpc::SslCredentialsOptions ssl;
  auto ca = ReadPem("ca_cert_file", o.ca_cert_file);
  auto cert = ReadPem("client_cert_file", o.client_cert_file);
  auto key = ReadPem("client_key_file", o.client_key_file);
  for (const auto* r : {&ca, &cert, &key})
    if (!r->ok()) return r->status();
  ssl.pem_root_certs = *ca;
  ssl.pem_cert_chain = *cert;
  ssl.pem_private_key = *key;
  return grpc::SslCredentials(ssl);
}

}  // namespace

// Retries UNAVAILABLE and CANCELLED: a replica killed mid-call can end it CANCELLED rather than
// UNAVAILABLE (once in 240 failover requests, Failover.*). Every method is free of side effects,
// so a retry is safe, and gRPC never retries a call the client cancelled itself.
std::string ServiceConfigJson(const ClientOptions& options) {
  return absl::StrFormat(
      R"({"loadBalancingConfig": [{"round_robin": {}}],
          "methodConfig": [{"name": [{"service": "embedding.v1.EmbeddingService"},
                                     {"service": "grpc.health.v1.Health"}],
                            "retryPolicy": {"maxAttempts": %d, "initialBackoff": "%.3fs",
                                            "maxBackoff": "%.3fs", "backoffMultiplier": 2,
                                            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"]}}]})",
      std::max(2, options.max_attempts), absl::ToDoubleSeconds(options.initial_backoff),
      absl::ToDoubleSeconds(options.max_backoff));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

v1::EmbedRequest MakeEmbedRequest(const std::vector<std::string>& texts,
                                  const EmbedOptions& options) {
  v1::EmbedRequest request;
  request.set_model(options.model);
  for (const auto& t : texts) request.add_inputs(t);
  if (options.temperature) request.set_temperature(*options.temperature);
  request.set_temperature_mode(options.temperature_mode);
  request.set_strategy(options.strategy);
  request.set_truncation_side(options.truncation_side);
  if (options.chunk_tokens) request.set_chunk_tokens(*options.chunk_tokens);
  if (options.chunk_overlap_tokens) request.set_chunk_overlap_tokens(*options.chunk_overlap_tokens);
  if (options.normalize) request.set_normalize(*options.normalize);
  if (options.dimensions) request.set_dimensions(*options.dimensions);
  request.set_prompt_name(options.prompt_name);
  request.set_task(options.task);
  request.set_prompt(options.prompt);
  return request;
}

std::vector<std::vector<float>> ToVectors(const v1::EmbedResponse& response) {
  std::vector<std::vector<float>> out;
  for (const auto& doc : response.documents())
    out.emplace_back(doc.vector().begin(), doc.vector().end());
  return out;
}

absl::StatusOr<std::unique_ptr<EmbeddingClient>> EmbeddingClient::Connect(
    const ClientOptions& options) {
  if (options.addresses.empty())
    return absl::InvalidArgumentError("addresses: at least one address is required");
  std::string target;
  if (options.addresses.size() == 1) {
    target = options.addresses[0];
  } else {
    target = "ipv4:" + absl::StrJoin(options.addresses, ",");
  }
  auto credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(ServiceConfigJson(options));
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, options.max_attempts > 1 ? 1 : 0);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(target, *credentials, args);
  return std::unique_ptr<EmbeddingClient>(new EmbeddingClient(options, std::move(channel)));
}

EmbeddingClient::EmbeddingClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(v1::EmbeddingService::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> EmbeddingClient::NewContext(
    std::optional<absl::Duration> timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout.value_or(options_.timeout)));
  if (!options_.bearer_token.empty())
    context->AddMetadata("authorization", "Bearer " + options_.bearer_token);
  return context;
}

absl::StatusOr<v1::EmbedResponse> EmbeddingClient::Embed(const v1::EmbedRequest& request,
                                                         std::optional<absl::Duration> timeout) {
  auto context = NewContext(timeout);
  v1::EmbedResponse response;
  grpc::Status status = stub_->Embed(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<std::vector<std::vector<float>>> EmbeddingClient::EmbedTexts(
    const std::vector<std::string>& texts, const EmbedOptions& options) {
  auto response = Embed(MakeEmbedRequest(texts, options));
  if (!response.ok()) return response.status();
  return ToVectors(*response);
}

absl::StatusOr<v1::TokenizeResponse> EmbeddingClient::Tokenize(const v1::TokenizeRequest& request) {
  auto context = NewContext();
  v1::TokenizeResponse response;
  grpc::Status status = stub_->Tokenize(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::RerankResponse> EmbeddingClient::Rerank(const v1::RerankRequest& request) {
  auto context = NewContext();
  v1::RerankResponse response;
  grpc::Status status = stub_->Rerank(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ClassifyResponse> EmbeddingClient::Classify(const v1::ClassifyRequest& request) {
  auto context = NewContext();
  v1::ClassifyResponse response;
  grpc::Status status = stub_->Classify(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

v1::ScoreOptions MakeScoreOptions(const EmbedOptions& options) {
  v1::ScoreOptions out;
  if (options.temperature.has_value()) out.set_temperature(*options.temperature);
  out.set_temperature_mode(options.temperature_mode);
  out.set_strategy(options.strategy);
  out.set_truncation_side(options.truncation_side);
  if (options.chunk_tokens.has_value()) out.set_chunk_tokens(*options.chunk_tokens);
  if (options.chunk_overlap_tokens.has_value())
    out.set_chunk_overlap_tokens(*options.chunk_overlap_tokens);
  return out;
}

absl::StatusOr<v1::ListModelsResponse> EmbeddingClient::ListModels() {
  auto context = NewContext();
  v1::ListModelsResponse response;
  grpc::Status status = stub_->ListModels(context.get(), v1::ListModelsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ModelInfo> EmbeddingClient::GetModelInfo(const std::string& model) {
  auto context = NewContext();
  v1::GetModelInfoRequest request;
  request.set_model(model);
  v1::ModelInfo response;
  grpc::Status status = stub_->GetModelInfo(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<bool> EmbeddingClient::IsServing(const std::string& service) {
  auto context = NewContext();
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status =
      grpc::health::v1::Health::NewStub(channel_)->Check(context.get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace embedding::client
