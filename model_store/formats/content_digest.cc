#include "model_store/formats/content_digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace embedding::model_store {
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string Finish(EVP_MD_CTX* context) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context, digest, &size);
  return absl::BytesToHexString(std::string(reinterpret_cast<char*>(digest), size));
}

bool AllHex(const std::string& text) {
  for (char c : text)
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

absl::StatusOr<DigestKind> DigestKindOfEtag(const std::string& etag) {
  if (AllHex(etag) && etag.size() == 64) return DigestKind::kSha256;
  if (AllHex(etag) && etag.size() == 40) return DigestKind::kGitBlobSha1;
  return absl::InvalidArgumentError(
      absl::StrCat("etag \"", etag.substr(0, 80), "\" is neither a SHA-256 nor a git blob SHA-1"));
}

absl::StatusOr<std::string> FileDigest(const std::string& path, DigestKind kind) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  const int64_t size = in.tellg();
  in.seekg(0);
  DigestContext context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), kind == DigestKind::kSha256 ? EVP_sha256() : EVP_sha1(),
                    nullptr);
  if (kind == DigestKind::kGitBlobSha1) {
    const std::string header = absl::StrCat("blob ", size, std::string(1, '\0'));
    EVP_DigestUpdate(context.get(), header.data(), header.size());
  }
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), buffer.size());
    EVP_DigestUpdate(context.get(), buffer.data(), in.gcount());
  }
  return Finish(context.get());
}

std::string Sha256Hex(const std::string& bytes) {
  DigestContext context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(context.get(), bytes.data(), bytes.size());
  return absl::AsciiStrToLower(Finish(context.get()));
}

}  // namespace embedding::model_store
