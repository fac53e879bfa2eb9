// The model `./dev.sh run` serves: a small BERT whose vectors mean something, built on the
// machine from WordNet and the Linux man-pages in well under a minute, with no download.
//
// Word vectors come from PPMI co-occurrence statistics over WordNet's glosses (general
// English) and the man pages' prose (technical text: system calls, files, sockets, memory,
// threads, strings, maths; see manpages_corpus.h), reduced by a
// randomized eigendecomposition and scaled down for frequent words (smooth inverse frequency,
// Arora et al. 2017). They fill the word-embedding table; the layers are set by hand so that
// attention smooths each token toward the tokens whose content it shares (query and key a
// scaled identity, value and output the identity), the feed-forward blocks are zero, and the
// LayerNorms have a large epsilon so they scale instead of normalising (a frequent word stays
// small). Mean pooling. A long sequence therefore collapses as a trained model does (each
// token's state drifts toward the sequence mean) and TempScale's τ < 1 visibly sharpens it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "model_store/demo/retrieval/manpages_corpus.h"
#include "model_store/demo/retrieval/wordnet_corpus.h"

namespace embedding::model_store {

struct RetrievalDemoSpec {
  std::string wordnet_dir = kWordNetDir;
  std::string manpages_list = kManPagesList;
  int vocab_size = 40000;
  int hidden_size = 256;
  int num_layers = 2;
  int num_heads = 1;
  int max_positions = 512;
  // Attention logits are attention_scale² · <x_i, x_j> / sqrt(d_head) for unit-scale content.
  double attention_scale = 3.0;
  // Smooth-inverse-frequency constant a: a token's vector is scaled by a / (a + p(token)).
  double sif = 1e-3;
  // Co-occurrence window, tokens on each side. Wide windows give topical vectors (what a text is
  // about), narrow ones syntactic (how a word is used): the mean cosine of unrelated
  // technical snippets' word-vector means was 0.25 with 2, 0.23 with 5, 0.20 with 10 (before
  // the top directions were removed), and paraphrase top-1 0.84, 0.98, 1.0.
  int context_window = 10;
  // Leading principal directions projected out of the word table (Mu & Viswanath 2018 set
  // about hidden_size / 100).
  int top_directions_removed = 2;
  uint64_t seed = 20241031;
};

// Writes config.json, model.safetensors, tokenizer.json, tokenizer_config.json and the
// sentence-transformers files into `dir` (created if needed). The same spec and WordNet give
// the same bytes on every machine. NOT_FOUND / FAILED_PRECONDITION from the corpus (see
// wordnet_corpus.h); INVALID_ARGUMENT naming a bad spec field; INTERNAL for I/O failures.
absl::Status WriteRetrievalDemoModel(const std::string& dir, const RetrievalDemoSpec& spec);

}  // namespace embedding::model_store
