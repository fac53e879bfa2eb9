// C++ client for embedding.v1.EmbeddingService.
//
//   ClientOptions connect;
//   connect.addresses = {"127.0.0.1:50051"};
//   auto client = EmbeddingClient::Connect(connect).value();
//   EmbedOptions options;
//   options.temperature = 0.8f;
//   auto vectors = client->EmbedTexts({"first document", "second"}, options);
//
// One address, several (spread round-robin), or any gRPC target such as dns:///svc:50051.
// Every call has a deadline. Errors are absl::Status with the server's gRPC code.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "embedding/v1/embedding.grpc.pb.h"

namespace embedding::client {

struct ClientOptions {
  // "host:port" entries (spread round-robin), or one gRPC target URI such as
  // dns:///embedding-headless:50051 (every resolved address, round-robin).
  std::vector<std::string> addresses;
  // Deadline of each call unless the call sets its own.
  absl::Duration timeout = absl::Seconds(60);
  // Calls failing with UNAVAILABLE are retried (all methods are idempotent): at most this many
  // attempts in all, with exponential backoff from initial_backoff up to max_backoff.
  int max_attempts = 4;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  // TLS: on when any of these is set or `tls` is true. PEM file paths; an empty CA uses the
  // system roots; a client certificate and key give mTLS.
  bool tls = false;
  std::string ca_cert_file;
  std::string client_cert_file;
  std::string client_key_file;
  // Sent as "authorization: Bearer <token>" on every call when set.
  std::string bearer_token;
};

// Request options; unset fields take the server's defaults.
struct EmbedOptions {
  std::string model;
  std::optional<float> temperature;
  // AUTO: the model's TempScale schedule per sequence length (leave `temperature` unset).
  v1::TemperatureMode temperature_mode = v1::TEMPERATURE_MODE_UNSPECIFIED;
  v1::LongTextStrategy strategy = v1::LONG_TEXT_STRATEGY_UNSPECIFIED;
  v1::TruncationSide truncation_side = v1::TRUNCATION_SIDE_UNSPECIFIED;
  std::optional<uint32_t> chunk_tokens;
  std::optional<uint32_t> chunk_overlap_tokens;
  std::optional<bool> normalize;
  std::optional<uint32_t> dimensions;
  std::string prompt_name;
  // Free text prepended to every input (a decoder's "Instruct: {task}\nQuery:"); exclusive
  // with prompt_name.
  std::string prompt;
  // A task adapter of the model (ModelInfo.tasks: jina-embeddings-v3's retrieval.query, ...).
  std::string task;
};

// `options` as Rerank's and Classify's ScoreOptions (model, prompt, normalize and dimensions
// do not apply there).
v1::ScoreOptions MakeScoreOptions(const EmbedOptions& options);

// The request EmbedTexts sends; for callers that need the full response.
v1::EmbedRequest MakeEmbedRequest(const std::vector<std::string>& texts,
                                  const EmbedOptions& options);

// One vector per input, from a response.
std::vector<std::vector<float>> ToVectors(const v1::EmbedResponse& response);

class EmbeddingClient {
 public:
  // Builds the channel (no network traffic until the first call). INVALID_ARGUMENT without
  // addresses or with unreadable TLS files.
  static absl::StatusOr<std::unique_ptr<EmbeddingClient>> Connect(const ClientOptions& options);

  absl::StatusOr<std::vector<std::vector<float>>> EmbedTexts(const std::vector<std::string>& texts,
                                                             const EmbedOptions& options = {});
  absl::StatusOr<v1::EmbedResponse> Embed(const v1::EmbedRequest& request,
                                          std::optional<absl::Duration> timeout = std::nullopt);
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request);
  absl::StatusOr<v1::RerankResponse> Rerank(const v1::RerankRequest& request);
  absl::StatusOr<v1::ClassifyResponse> Classify(const v1::ClassifyRequest& request);
  absl::StatusOr<v1::ListModelsResponse> ListModels();
  absl::StatusOr<v1::ModelInfo> GetModelInfo(const std::string& model = "");
  // The grpc.health.v1 status of `service` ("" for the server): true when SERVING.
  absl::StatusOr<bool> IsServing(const std::string& service = "");

  // For streaming and custom calls.
  v1::EmbeddingService::Stub& stub() { return *stub_; }
  const ClientOptions& options() const { return options_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // A context carrying the default deadline and the bearer token.
  std::unique_ptr<grpc::ClientContext> NewContext(
      std::optional<absl::Duration> timeout = std::nullopt) const;

 private:
  EmbeddingClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::EmbeddingService::Stub> stub_;
};

// The gRPC service config the client uses: round-robin, and retries on UNAVAILABLE.
std::string ServiceConfigJson(const ClientOptions& options);

// grpc::Status to absl::Status (the codes are the same numbers).
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace embedding::client
