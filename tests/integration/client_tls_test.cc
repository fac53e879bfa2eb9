// The client's TLS, mTLS and bearer-token options against an in-process TLS server that
// requires a client certificate and checks the token. Certificates come from openssl.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "client/embedding_client.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

class TokenCheckingService final : public v1::EmbeddingService::Service {
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest*,
                          v1::ListModelsResponse* response) override {
    auto it = context->client_metadata().find("authorization");
    if (it == context->client_metadata().end() || it->second != "Bearer s3cret")
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "authorization: bad bearer token");
    response->set_default_model("tls-ok");
    return grpc::Status::OK;
  }
};

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeScratchDir("pki");
    // A CA, and a server (SAN 127.0.0.1) and a client certificate it signs.
    testing::WriteFile(dir_ + "/make_pki.sh", R"sh(set -e
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.pem
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj /CN=$who -keyout $who.key -out $who.csr
  printf "subjectAltName=IP:127.0.0.1,DNS:localhost\n" > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile $who.ext -out $who.pem
done
)sh");
    ASSERT_EQ(std::system(("cd " + dir_ + " && sh make_pki.sh >/dev/null 2>&1").c_str()), 0)
        << "openssl failed";
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = testing::ReadFile(dir_ + "/ca.pem");
    ssl.pem_key_cert_pairs.push_back(
        {testing::ReadFile(dir_ + "/server.key"), testing::ReadFile(dir_ + "/server.pem")});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port_ > 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  client::ClientOptions Options() const {
    client::ClientOptions o;
    o.addresses = {"127.0.0.1:" + std::to_string(port_)};
    o.timeout = absl::Seconds(10);
    o.max_attempts = 1;
    o.ca_cert_file = dir_ + "/ca.pem";
    o.client_cert_file = dir_ + "/client.pem";
    o.client_key_file = dir_ + "/client.key";
    o.bearer_token = "s3cret";
    return o;
  }

  std::string dir_;
  int port_ = 0;
  TokenCheckingService service_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(ClientTlsTest, MutualTlsWithBearerToken) {
  auto client = client::EmbeddingClient::Connect(Options()).value();
  auto models = client->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->default_model(), "tls-ok");
}

TEST_F(ClientTlsTest, WrongTokenIsUnauthenticated) {
  auto options = Options();
  options.bearer_token = "wrong";
  auto models = client::EmbeddingClient::Connect(options).value()->ListModels();
  EXPECT_EQ(models.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(models.status().message(), ::testing::HasSubstr("authorization"));
}

TEST_F(ClientTlsTest, NoClientCertificateIsRefused) {
  auto options = Options();
  options.client_cert_file.clear();
  options.client_key_file.clear();
  auto models = client::EmbeddingClient::Connect(options).value()->ListModels();
  EXPECT_EQ(models.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientTlsTest, HalfAClientPairIsAnError) {
  auto options = Options();
  options.client_key_file.clear();
  auto client = client::EmbeddingClient::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr("client_cert_file"));
}

}  // namespace
}  // namespace embedding
