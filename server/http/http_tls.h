// TLS on the HTTP listener (--http-tls): the gRPC listener's certificate and key, re-read when
// the files change, so both listeners rotate together without a restart. Server
// authentication only: kubelet probes and Prometheus present no client certificate.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/security/tls_options.h"

namespace embedding::server {

struct TlsKeyPair;  // a certificate chain and its key (http_tls.cc)

class HttpTlsCertificate {
 public:
  // Reads the pair once. INVALID_ARGUMENT naming the flag for a missing or unreadable file,
  // or a key that does not match the certificate.
  static absl::StatusOr<std::unique_ptr<HttpTlsCertificate>> Load(const TlsOptions& tls);
  ~HttpTlsCertificate();

  // Makes every handshake on `ctx` present the current pair (looked up per handshake, and
  // re-read at most once per reload interval when the files changed). The certificate must
  // outlive `ctx`.
  void Install(SSL_CTX& ctx);

 private:
  using Pair = TlsKeyPair;
  explicit HttpTlsCertificate(const TlsOptions& tls) : tls_(tls) {}
  // The pair to present now, re-reading the files if due and changed. A new pair that does
  // not load keeps the old one (and says so on stderr).
  std::shared_ptr<const Pair> Current();
  static int OnHandshake(SSL* ssl, void* self);

  const TlsOptions tls_;
  std::mutex mu_;
  std::shared_ptr<const Pair> pair_;
  std::string files_stamp_;  // sizes and modification times of the pair's files
  absl::Time next_check_ = absl::InfinitePast();
};

}  // namespace embedding::server
