// The demo models' `tokenizer.json` files, in the layout Hugging Face tokenizers writes:
// BERT's WordPiece, XLM-R's Unigram with the Metaspace pre-tokenizer, Qwen's and RoBERTa's
// byte-level BPE.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace embedding::model_store {

// BertNormalizer (lowercasing), BertPreTokenizer, WordPiece, `cls` $A `sep`. `vocab`'s first
// five entries are its special tokens ([PAD] [UNK] [CLS] [SEP] [MASK] for BERT; MPNet's
// <s> <pad> </s> [UNK] <mask>), and it holds [UNK].
nlohmann::json WordPieceTokenizerJson(const std::vector<std::string>& vocab,
                                      const std::string& cls = "[CLS]",
                                      const std::string& sep = "[SEP]");

// NFKC, Metaspace ("▁", prepend always), Unigram with byte fallback, <s> $A </s>. `pieces`
// starts <s> <pad> </s> <unk> and ends with <mask>.
nlohmann::json UnigramTokenizerJson(const std::vector<std::pair<std::string, double>>& pieces);

// Qwen2/Qwen3's layout: NFC, Split on Qwen's pattern then ByteLevel, byte-level BPE, and a
// post-processor that appends <|endoftext|> (the token last-token pooling reads). The vocabulary
// is GPT-2's 256 byte characters, then each word of `words` (after a space: "Ġword") built by
// merges of its prefixes, until `vocab_size` tokens; <|endoftext|> takes the next id.
nlohmann::json ByteLevelBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size);

// T5's SentencePiece layout: Unigram over `pieces` without their first four and last (the
// XLM-R specials the demo vocabulary carries), led by <pad> 0, </s> 1, <unk> 2; NFKC, Metaspace,
// no byte fallback; each sequence $A </s>.
nlohmann::json T5UnigramTokenizerJson(const std::vector<std::pair<std::string, double>>& pieces);

// Gemma's layout: spaces replaced by "▁", no pre-tokenizer, BPE over UTF-8 characters with
// byte fallback (<0x00>..<0xFF>) and fused unknowns; <pad> 0, <eos> 1, <bos> 2, <unk> 3; each
// sequence <bos> A <eos> (EmbeddingGemma's). Words enter as "▁word" built by merges.
nlohmann::json GemmaBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size);

// Qwen3-Reranker's kind (a chat model's): the same, but a ByteLevel post-processor that adds
// nothing, the chat tokens <|im_start|>, <|im_end|>, <think> and </think> as added tokens, and
// bare "yes" and "no" reachable by merges; ids below `vocab_size`.
nlohmann::json ChatBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size);

// RoBERTa's layout (roberta-base's tokenizer.json): <s> <pad> </s> <unk>, the same byte-level
// pieces, <mask> last (id vocab_size - 1); ByteLevel pre-tokenizer with GPT-2's regex, no
// normalizer, RobertaProcessing (<s> $A </s>).
nlohmann::json RobertaBpeTokenizerJson(const std::vector<std::string>& words, int64_t vocab_size);

}  // namespace embedding::model_store
