#include "server/security/bearer_auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace embedding::server {
namespace {

constexpr absl::string_view kScheme = "Bearer ";

}  // namespace

absl::Status BearerAuth::ReadTokens(std::vector<Digest>* digests) const {
  std::ifstream in(path_);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file=", path_, ": cannot read"));
  std::string line;
  while (std::getline(in, line)) {
    const absl::string_view token = absl::StripAsciiWhitespace(line);
    if (token.empty() || token[0] == '#') continue;
    Digest digest;
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
    digests->push_back(digest);
  }
  if (digests->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file=", path_, ": holds no token (one per line)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BearerAuth>> BearerAuth::Load(const std::string& path, Warn warn) {
  auto auth = std::unique_ptr<BearerAuth>(new BearerAuth(path, std::move(warn)));
  std::error_code ec;
  auth->loaded_mtime_ = std::filesystem::last_write_time(path, ec);
  absl::Status read = auth->ReadTokens(&auth->digests_);
  if (!read.ok()) return read;
  auth->last_check_ = absl::Now();
  return auth;
}

void BearerAuth::ReloadIfChanged() const {
  const absl::Time now = absl::Now();
  if (now - last_check_ < absl::Seconds(1)) return;
  last_check_ = now;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  if (ec || mtime == loaded_mtime_) return;
  std::vector<Digest> fresh;
  if (absl::Status read = ReadTokens(&fresh); !read.ok()) {
    if (warn_) warn_(absl::StrCat("keeping the previous tokens: ", read.message()));
  } else {
    digests_ = std::move(fresh);
  }
  loaded_mtime_ = mtime;
}

absl::Status BearerAuth::Check(absl::string_view authorization) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "authorization: missing; send the header 'authorization: Bearer <token>'");
  }
  if (!absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return absl::UnauthenticatedError("authorization: not a Bearer token");
  }
  const absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  Digest presented;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), presented.data());
  std::lock_guard<std::mutex> lock(mu_);
  ReloadIfChanged();
  bool match = false;
  for (const Digest& valid : digests_)  // every one, so the time says nothing about which
    match |= CRYPTO_memcmp(valid.data(), presented.data(), presented.size()) == 0;
  if (match) return absl::OkStatus();
  return absl::UnauthenticatedError("authorization: the token is not accepted");
}

}  // namespace embedding::server
