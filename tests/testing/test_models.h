// Helpers for tests that need a model directory: the tiny demo model the ctest fixture writes,
// scratch copies of it, and checkpoint rewriting for corruption tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "model_store/formats/safetensors_writer.h"

namespace embedding::testing {

// The tiny demo model written by the `tiny_model` ctest fixture (env TINY_MODEL_DIR).
std::string TinyModelDir();

// The small demo model (4 layers, 256 wide): slow enough that a 100,000-token document takes
// seconds. Env SMALL_MODEL_DIR overrides.
std::string SmallModelDir();

// The long-window demo models (2 layers, 64 wide, 8,192 tokens per window): XLM-RoBERTa with a
// Unigram tokenizer, and NomicBert with rotary positions.
std::string XlmRobertaModelDir();
std::string NomicBertModelDir();
// GTE "new" (2 layers, 64 wide, 8,192 tokens per window): rotary with fixed NTK scaling.
std::string GteModelDir();
// JinaBERT v2 (2 layers, 96 wide in 12 heads, so ALiBi's slopes for a head count that is not
// a power of two; 8,192 tokens per window).
std::string JinaBertModelDir();
// ModernBERT (4 layers, 64 wide, 8,192 tokens per window): layers 0 and 3 global, 1 and 2
// local (a band of +-64).
std::string ModernBertModelDir();
// Decoders: Qwen3's shape (4 query heads on 2 key/value heads of 32, q/k norms) and Qwen2's
// (q/k/v biases, one key/value head); byte-level BPE appending <|endoftext|>, last-token pooling.
std::string Qwen3ModelDir();
std::string Qwen2ModelDir();
// NomicBert again, 128 wide in two heads of 64: projections split by head in every kernel.
std::string NomicBertHeadsOf64ModelDir();
// The BERT kind under other names (2 layers, 64 wide, 512 positions): RoBERTa with byte-level
// BPE, CamemBERT with Unigram, DistilBERT with its own keys and weight names.
std::string RobertaModelDir();
std::string CamembertModelDir();
std::string DistilBertModelDir();
// MPNet (2 layers, 64 wide, 512 positions): a relative position bias shared by its layers.
std::string MpnetModelDir();
// EmbeddingGemma's layout (3 layers, 64 wide, 4,096 positions, a band of +-511 in layers 0 and
// 1), T5 encoders (ReLU, and gated) and NomicBert v2's experts (4 of them, top 2, layers 1, 3).
std::string Gemma3ModelDir();
std::string T5ModelDir();
std::string T5GatedModelDir();
std::string NomicMoeModelDir();
// jina-embeddings-v3's layout: XLM-R with rotary positions and five task adapters.
std::string JinaV3ModelDir();

// `n` words, seeded, that the demo models' vocabulary holds as one token each.
std::string SingleTokenWords(int n, uint32_t seed);

// A fresh empty directory under the test's temp dir.
std::string MakeScratchDir(const std::string& name);

// Copies `from` into a fresh scratch directory and returns its path.
std::string CopyModelDir(const std::string& from, const std::string& name);

// Reads every tensor of `path` as float32.
std::map<std::string, model_store::F32Tensor> ReadTensors(const std::string& path);

void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

}  // namespace embedding::testing
