// The retrieval demo model's training text: WordNet 3.0 as Debian's `wordnet-base` installs it,
// checked against pinned digests so every machine trains on the same bytes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// Where `wordnet-base` (1:3.0-37, Debian 12) puts the database.
inline constexpr char kWordNetDir[] = "/usr/share/wordnet";

// One document per synset, in file order (noun, verb, adj, adv): its lemmas, its hypernyms'
// lemmas, then its gloss (definition and examples), e.g. "cat, true cat; feline; feline
// mammal usually having thick soft fur ...". NOT_FOUND naming the package when a file is
// missing; FAILED_PRECONDITION naming the file and both SHA-256 digests when a file differs from
// the pinned release (the model would then differ from every other machine's).
absl::StatusOr<std::vector<std::string>> ReadWordNetCorpus(const std::string& dir);

}  // namespace embedding::model_store
