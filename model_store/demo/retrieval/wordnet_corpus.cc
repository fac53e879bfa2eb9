#include "model_store/demo/retrieval/wordnet_corpus.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "model_store/formats/content_digest.h"

namespace embedding::model_store {
namespace {

struct PinnedFile {
  const char* name;
  char pos;  // the part-of-speech letter pointers use for this file's synsets
  const char* sha256;
};

// wordnet-base 1:3.0-37 (Debian 12): `sha256sum /usr/share/wordnet/data.*`.
constexpr PinnedFile kDataFiles[] = {
    {"data.noun", 'n', "fea17d2f9656611334eac790e5d69e47645fa180c4aa481fb4cd9b3520754ca2"},
    {"data.verb", 'v', "adcf43e35b581e8036d8b5a52d63d9cd3d3b4870b2720d3c03c799df44777bc2"},
    {"data.adj", 'a', "c89120dfc1f046ddff4a631bf9b7e9fa1a36b5e86565a23bf82dbe14f30b88a7"},
    {"data.adv", 'r', "444a63bf3955080ab7524f5079cfc07ff9bc682cb98bdb1db73b0fb9829f1139"},
};

absl::StatusOr<std::string> ReadPinned(const std::string& dir, const PinnedFile& file) {
  const std::string path = (std::filesystem::path(dir) / file.name).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        path,
        ": cannot read; the retrieval demo model is trained on WordNet (apt-get install "
        "wordnet-base)"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  const std::string digest = Sha256Hex(bytes);
  if (digest != file.sha256) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": SHA-256 ", digest, " differs from the pinned wordnet-base 1:3.0-37 (",
                     file.sha256, "); the demo model would differ from every other machine's"));
  }
  return bytes;
}

struct Synset {
  std::string lemmas;                  // "cat, true cat"
  std::vector<std::string> hypernyms;  // "<pos><offset>" keys
  std::string gloss;
};

// A data line: offset lex_filenum ss_type w_cnt(hex) [word lex_id]... p_cnt [ptr offset pos
// source/target]... [frames] | gloss. Lines starting with two spaces are the licence header.
bool ParseLine(absl::string_view line, char pos, std::string* key, Synset* synset) {
  if (line.size() < 2 || line[0] == ' ') return false;
  const size_t bar = line.find(" | ");
  if (bar == absl::string_view::npos) return false;
  std::vector<absl::string_view> f = absl::StrSplit(line.substr(0, bar), ' ', absl::SkipEmpty());
  if (f.size() < 4) return false;
  *key = absl::StrCat(std::string(1, pos), f[0]);
  size_t i = 3;
  const size_t words = std::stoul(std::string(f[i++]), nullptr, 16);
  std::vector<std::string> lemmas;
  for (size_t w = 0; w < words && i + 1 < f.size(); ++w, i += 2) {
    std::string lemma = absl::StrReplaceAll(f[i], {{"_", " "}});
    // Adjective markers such as "(a)" or "(p)".
    if (const size_t paren = lemma.find('('); paren != std::string::npos) lemma.resize(paren);
    lemmas.push_back(std::move(lemma));
  }
  synset->lemmas = absl::StrJoin(lemmas, ", ");
  if (i < f.size()) {
    const size_t pointers = std::stoul(std::string(f[i++]));
    for (size_t p = 0; p < pointers && i + 3 < f.size(); ++p, i += 4) {
      // Satellite adjectives ("s") live in data.adj with the "a" ones.
      const char target = f[i + 2][0] == 's' ? 'a' : f[i + 2][0];
      if (f[i] == "@" || f[i] == "@i")
        synset->hypernyms.push_back(absl::StrCat(std::string(1, target), f[i + 1]));
    }
  }
  synset->gloss = std::string(absl::StripTrailingAsciiWhitespace(line.substr(bar + 3)));
  return true;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadWordNetCorpus(const std::string& dir) {
  std::vector<std::string> order;
  std::unordered_map<std::string, Synset> synsets;
  for (const PinnedFile& file : kDataFiles) {
    ASSIGN_OR_RETURN(const std::string bytes, ReadPinned(dir, file));
    const char pos = file.pos;
    for (absl::string_view line : absl::StrSplit(bytes, '\n')) {
      std::string key;
      Synset synset;
      if (!ParseLine(line, pos, &key, &synset)) continue;
      order.push_back(key);
      synsets.emplace(std::move(key), std::move(synset));
    }
  }
  std::vector<std::string> documents;
  documents.reserve(order.size());
  for (const std::string& key : order) {
    const Synset& s = synsets.at(key);
    std::vector<std::string> parents;
    for (const std::string& h : s.hypernyms) {
      if (auto it = synsets.find(h); it != synsets.end()) parents.push_back(it->second.lemmas);
    }
    documents.push_back(absl::StrCat(s.lemmas, "; ", absl::StrJoin(parents, "; "), "; ", s.gloss));
  }
  return documents;
}

}  // namespace embedding::model_store
