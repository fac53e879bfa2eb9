// TLS, mTLS and bearer tokens between the client library and a real server: the server's
// --tls-* and --auth-token-file flags, the client's matching options, and certificates that
// rotate under a running server. Certificates come from openssl.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>

#include "client/embedding_client.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

// A CA, and a server (SAN 127.0.0.1) and a client certificate it signs, in `dir`.
void MakePki(const std::string& dir) {
  testing::WriteFile(dir + "/make_pki.sh", R"sh(set -e
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.pem
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj /CN=$who -keyout $who.key -out $who.csr
  printf "subjectAltName=IP:127.0.0.1,DNS:localhost\n" > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile $who.ext -out $who.pem
done
)sh");
  ASSERT_EQ(std::system(("cd " + dir + " && sh make_pki.sh >/dev/null 2>&1").c_str()), 0)
      << "openssl failed";
}

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeScratchDir("pki");
    MakePki(dir_);
    // The server reads copies, so a test can rotate them.
    for (const char* file : {"server.pem", "server.key", "ca.pem"})
      std::filesystem::copy_file(dir_ + "/" + file, dir_ + "/served-" + file);
    testing::WriteFile(dir_ + "/tokens", "s3cret\n");
    server_ = std::make_unique<testing::ServerProcess>(std::vector<std::string>{
        "--model=tiny=" + testing::TinyModelDir(), "--tls-cert-file=" + dir_ + "/served-server.pem",
        "--tls-key-file=" + dir_ + "/served-server.key",
        "--tls-client-ca-file=" + dir_ + "/served-ca.pem", "--tls-reload-interval-s=1",
        "--auth-token-file=" + dir_ + "/tokens"});
    ASSERT_TRUE(server_->ok()) << server_->Log();
  }

  client::ClientOptions Options(const std::string& pki) const {
    client::ClientOptions o;
    o.addresses = {server_->grpc_address()};
    o.timeout = absl::Seconds(10);
    o.max_attempts = 1;
    o.ca_cert_file = pki + "/ca.pem";
    o.client_cert_file = pki + "/client.pem";
    o.client_key_file = pki + "/client.key";
    o.bearer_token = "s3cret";
    return o;
  }

  static absl::Status ListModels(const client::ClientOptions& options) {
    return client::EmbeddingClient::Connect(options).value()->ListModels().status();
  }

  std::string dir_;
  std::unique_ptr<testing::ServerProcess> server_;
};

TEST_F(ClientTlsTest, MutualTlsWithBearerToken) {
  auto client = client::EmbeddingClient::Connect(Options(dir_)).value();
  auto models = client->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->default_model(), "tiny");
  EXPECT_TRUE(client->EmbedTexts({"over TLS"}).ok());
}

TEST_F(ClientTlsTest, WrongTokenIsUnauthenticated) {
  auto options = Options(dir_);
  options.bearer_token = "wrong";
  const absl::Status status = ListModels(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("authorization"));
}

TEST_F(ClientTlsTest, NoClientCertificateOrPlaintextIsRefused) {
  auto options = Options(dir_);
  options.client_cert_file.clear();
  options.client_key_file.clear();
  EXPECT_EQ(ListModels(options).code(), absl::StatusCode::kUnavailable);
  client::ClientOptions plaintext;
  plaintext.addresses = {server_->grpc_address()};
  plaintext.timeout = absl::Seconds(5);
  plaintext.max_attempts = 1;
  plaintext.bearer_token = "s3cret";
  EXPECT_EQ(ListModels(plaintext).code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientTlsTest, HalfAClientPairIsAnError) {
  auto options = Options(dir_);
  options.client_key_file.clear();
  auto client = client::EmbeddingClient::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr("client_cert_file"));
}

// A new CA, server certificate and client CA replace the files under the running server: within
// the reload interval, clients of the new CA connect and clients of the old one no longer do.
TEST_F(ClientTlsTest, CertificatesRotateWithoutARestart) {
  const std::string next = testing::MakeScratchDir("pki_next");
  MakePki(next);
  ASSERT_TRUE(ListModels(Options(dir_)).ok());
  for (const char* file : {"server.pem", "server.key", "ca.pem"}) {
    std::filesystem::copy_file(next + "/" + file, dir_ + "/served-" + file,
                               std::filesystem::copy_options::overwrite_existing);
  }
  absl::Status rotated = absl::UnknownError("not tried");
  for (int i = 0; i < 40 && !rotated.ok(); ++i) {
    absl::SleepFor(absl::Milliseconds(250));
    rotated = ListModels(Options(next));
  }
  EXPECT_TRUE(rotated.ok()) << rotated;
  EXPECT_EQ(ListModels(Options(dir_)).code(), absl::StatusCode::kUnavailable);
}

// `path` on the HTTPS listener at `address`, trusting only `ca_file`; -1 when no answer.
int HttpsStatus(const std::string& address, const std::string& ca_file, const char* path) {
  const size_t colon = address.rfind(':');
  httplib::SSLClient https(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
  https.set_ca_cert_path(ca_file.c_str());
  https.enable_server_certificate_verification(true);
  https.set_connection_timeout(5, 0);
  auto response = https.Get(path);
  return response ? response->status : -1;
}

// --http-tls: the HTTP listener serves the gRPC listener's certificate, verified against its
// CA, refuses plaintext, and rotates with the files like gRPC does.
TEST(HttpTls, ProbesAndMetricsOverTlsWithTheRotatingCertificate) {
  const std::string dir = testing::MakeScratchDir("http_pki");
  MakePki(dir);
  for (const char* file : {"server.pem", "server.key"})
    std::filesystem::copy_file(dir + "/" + file, dir + "/served-" + file);
  testing::ServerProcess server({"--model=tiny=" + testing::TinyModelDir(), "--http-tls",
                                 "--tls-cert-file=" + dir + "/served-server.pem",
                                 "--tls-key-file=" + dir + "/served-server.key",
                                 "--tls-reload-interval-s=1"});
  ASSERT_TRUE(server.ok()) << server.Log();
  const std::string http = server.http_address();
  EXPECT_EQ(HttpsStatus(http, dir + "/ca.pem", "/healthz"), 200);
  EXPECT_EQ(HttpsStatus(http, dir + "/ca.pem", "/readyz"), 200);
  EXPECT_EQ(HttpsStatus(http, dir + "/ca.pem", "/metrics"), 200);
  EXPECT_EQ(testing::HttpStatus(http, "/healthz"), -1) << "plaintext must not be answered";

  const std::string next = testing::MakeScratchDir("http_pki_next");
  MakePki(next);
  // The key first, then the certificate: in between, the pair does not match and the old
  // one keeps serving.
  for (const char* file : {"server.key", "server.pem"}) {
    std::filesystem::copy_file(next + "/" + file, dir + "/served-" + file,
                               std::filesystem::copy_options::overwrite_existing);
  }
  int rotated = -1;
  for (int i = 0; i < 40 && rotated != 200; ++i) {
    absl::SleepFor(absl::Milliseconds(250));
    rotated = HttpsStatus(http, next + "/ca.pem", "/healthz");
  }
  EXPECT_EQ(rotated, 200);
  EXPECT_EQ(HttpsStatus(http, dir + "/ca.pem", "/healthz"), -1);
}

TEST(ServerTlsFlags, BadCombinationsAreStartUpErrorsNamingTheFlag) {
  testing::ServerProcess half({"--model=tiny=" + testing::TinyModelDir(),
                               "--tls-cert-file=/nonexistent/cert.pem"},
                              absl::Seconds(20));
  EXPECT_EQ(half.Wait(), 2);
  EXPECT_THAT(half.Log(), ::testing::HasSubstr("--tls-cert-file and --tls-key-file"));
  testing::ServerProcess missing(
      {"--model=tiny=" + testing::TinyModelDir(), "--tls-cert-file=/nonexistent/cert.pem",
       "--tls-key-file=/nonexistent/key.pem"},
      absl::Seconds(20));
  EXPECT_EQ(missing.Wait(), 2);
  EXPECT_THAT(missing.Log(), ::testing::HasSubstr("--tls-cert-file=/nonexistent/cert.pem"));
  testing::ServerProcess http_alone({"--model=tiny=" + testing::TinyModelDir(), "--http-tls"},
                                    absl::Seconds(20));
  EXPECT_EQ(http_alone.Wait(), 2);
  EXPECT_THAT(http_alone.Log(),
              ::testing::HasSubstr("--http-tls: needs --tls-cert-file and --tls-key-file"));
}

}  // namespace
}  // namespace embedding
