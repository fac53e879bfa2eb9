#include "server/http/http_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/observability/server_log.h"

namespace embedding::server {

struct TlsKeyPair {
  std::vector<X509*> chain;  // leaf first
  EVP_PKEY* key = nullptr;
  ~TlsKeyPair() {
    for (X509* cert : chain) X509_free(cert);
    EVP_PKEY_free(key);
  }
};

namespace {

// Sizes and modification times of the certificate and key files: changes when either does.
std::string FilesStamp(const TlsOptions& tls) {
  std::string stamp;
  for (const std::string& path : {tls.cert_file, tls.key_file}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    const auto mtime = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
    absl::StrAppend(&stamp, path, ":", size, ":", static_cast<int64_t>(mtime), ";");
  }
  return stamp;
}

absl::StatusOr<std::shared_ptr<const TlsKeyPair>> ReadPair(const TlsOptions& tls) {
  auto pair = std::make_shared<TlsKeyPair>();
  if (FILE* file = std::fopen(tls.cert_file.c_str(), "r")) {
    while (X509* cert = PEM_read_X509(file, nullptr, nullptr, nullptr)) pair->chain.push_back(cert);
    std::fclose(file);
  }
  if (FILE* file = std::fopen(tls.key_file.c_str(), "r")) {
    pair->key = PEM_read_PrivateKey(file, nullptr, nullptr, nullptr);
    std::fclose(file);
  }
  const bool matches = !pair->chain.empty() && pair->key != nullptr &&
                       X509_check_private_key(pair->chain.front(), pair->key) == 1;
  ERR_clear_error();  // the end-of-file "error" of the PEM loop, or a mismatch
  if (pair->chain.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert-file=", tls.cert_file, ": no readable PEM certificate"));
  }
  if (!matches) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key-file=", tls.key_file, ": no readable PEM private key for --tls-cert-file"));
  }
  return pair;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTlsCertificate>> HttpTlsCertificate::Load(
    const TlsOptions& tls) {
  if (tls.cert_file.empty() || tls.key_file.empty())
    return absl::InvalidArgumentError("--http-tls: needs --tls-cert-file and --tls-key-file");
  std::unique_ptr<HttpTlsCertificate> certificate(new HttpTlsCertificate(tls));
  certificate->files_stamp_ = FilesStamp(tls);
  auto pair = ReadPair(tls);
  if (!pair.ok()) return pair.status();
  certificate->pair_ = *std::move(pair);
  certificate->next_check_ = absl::Now() + absl::Seconds(tls.reload_interval_s);
  return certificate;
}

HttpTlsCertificate::~HttpTlsCertificate() = default;

std::shared_ptr<const TlsKeyPair> HttpTlsCertificate::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  if (now < next_check_) return pair_;
  next_check_ = now + absl::Seconds(tls_.reload_interval_s);
  const std::string stamp = FilesStamp(tls_);
  if (stamp == files_stamp_) return pair_;
  files_stamp_ = stamp;
  auto pair = ReadPair(tls_);
  if (pair.ok()) {
    pair_ = *std::move(pair);
  } else {  // mid-rotation (key written, certificate not yet) or broken: keep the old pair
    ServerLog(LogLevel::kWarning, absl::StrCat("--http-tls: keeping the current certificate: ",
                                               pair.status().message()));
  }
  return pair_;
}

int HttpTlsCertificate::OnHandshake(SSL* ssl, void* self) {
  const std::shared_ptr<const TlsKeyPair> pair = static_cast<HttpTlsCertificate*>(self)->Current();
  // SSL_use_* and SSL_add1_chain_cert take their own references.
  if (SSL_use_certificate(ssl, pair->chain.front()) != 1 ||
      SSL_use_PrivateKey(ssl, pair->key) != 1) {
    return 0;
  }
  SSL_clear_chain_certs(ssl);
  for (size_t i = 1; i < pair->chain.size(); ++i) SSL_add1_chain_cert(ssl, pair->chain[i]);
  return 1;
}

void HttpTlsCertificate::Install(SSL_CTX& ctx) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_cert_cb(&ctx, &HttpTlsCertificate::OnHandshake, this);
}

}  // namespace embedding::server
