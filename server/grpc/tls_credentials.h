// The gRPC listener's credentials: plaintext, TLS from a certificate and key, or mTLS with a
// client CA. The files are watched and re-read when they change (gRPC's
// FileWatcherCertificateProvider), so certificates rotate without a restart.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "absl/status/statusor.h"
#include "server/security/tls_options.h"

namespace embedding::server {

// INVALID_ARGUMENT naming the flag when a file cannot be read, or when only one of
// certificate and key is given, or a client CA without them.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> GrpcServerCredentials(
    const TlsOptions& tls);

}  // namespace embedding::server
