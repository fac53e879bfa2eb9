#include "model_store/demo/retrieval/manpages_corpus.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "model_store/demo/retrieval/roff_text.h"
#include "model_store/formats/content_digest.h"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;

// manpages-dev 6.03-2 (Debian 12): SHA-256 over every regular section 2 and 3 page the list
// names, in its order, each as "<path>\n<compressed bytes>" (ReadManPagesCorpus computes it).
constexpr char kPinnedSha256[] =
    "2349124b64ea153094e944e67a11f30947e58f125e6fbeeb27ad871921f3b637";
constexpr char kInstall[] = "apt-get install manpages-dev";

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        path, ": cannot read; the retrieval demo model's technical text is the Linux man-pages (",
        kInstall, ")"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A page's roff source; zlib reads gzip members and passes plain files through.
absl::StatusOr<std::string> Decompress(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open (", kInstall, ")"));
  std::string out;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(file.get(), chunk, sizeof(chunk))) > 0) out.append(chunk, n);
  if (n < 0) return absl::DataLossError(absl::StrCat(path, ": not a readable gzip file"));
  return out;
}

bool IsPage(const std::string& path) {
  std::error_code ec;
  return (absl::StrContains(path, "/man2/") || absl::StrContains(path, "/man3/")) &&
         fs::symlink_status(path, ec).type() == fs::file_type::regular;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadManPagesCorpus(const std::string& list_path) {
  ASSIGN_OR_RETURN(const std::string list, ReadFile(list_path));
  std::vector<std::string> pages;
  std::string pinned_bytes;
  for (absl::string_view line : absl::StrSplit(list, '\n', absl::SkipEmpty())) {
    const std::string path(line);
    if (!IsPage(path)) continue;
    ASSIGN_OR_RETURN(const std::string bytes, ReadFile(path));
    absl::StrAppend(&pinned_bytes, path, "\n", bytes);
    pages.push_back(path);
  }
  const std::string digest = Sha256Hex(pinned_bytes);
  if (digest != kPinnedSha256) {
    return absl::FailedPreconditionError(absl::StrCat(
        list_path, ": the ", pages.size(), " pages' SHA-256 ", digest,
        " differs from the pinned manpages-dev 6.03-2 (", kPinnedSha256,
        "); the demo model would differ from every other machine's"));
  }
  std::vector<std::string> paragraphs;
  for (const std::string& path : pages) {
    ASSIGN_OR_RETURN(const std::string roff, Decompress(path));
    for (std::string& p : RoffParagraphs(roff)) paragraphs.push_back(std::move(p));
  }
  return paragraphs;
}

}  // namespace embedding::model_store
