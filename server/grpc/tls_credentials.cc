#include "server/grpc/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <fstream>

#include "absl/strings/str_cat.h"

namespace embedding::server {
namespace {

absl::Status Readable(const char* flag, const std::string& path) {
  if (std::ifstream(path).good()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": cannot read"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> GrpcServerCredentials(
    const TlsOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca-file: needs --tls-cert-file and --tls-key-file");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty())
    return absl::InvalidArgumentError("--tls-cert-file and --tls-key-file go together");
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"tls-cert-file", tls.cert_file},
        {"tls-key-file", tls.key_file},
        {"tls-client-ca-file", tls.client_ca_file}}) {
    if (path.empty()) continue;
    if (absl::Status readable = Readable(flag, path); !readable.ok()) return readable;
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.client_ca_file, tls.reload_interval_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (tls.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace embedding::server
