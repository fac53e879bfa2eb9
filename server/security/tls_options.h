// TLS settings shared by both doors: the gRPC listener (server/grpc/tls_credentials.h) and,
// with --http-tls, the HTTP listeners (server/http/http_tls.h).
#pragma once

#include <string>

namespace embedding::server {

// Empty certificate and key: plaintext.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // set: mTLS, every client presents a certificate it signed
  unsigned reload_interval_s = 60;
  bool http = false;  // --http-tls: the HTTP listener serves HTTPS with the same pair
};

}  // namespace embedding::server
