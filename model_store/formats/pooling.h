// How a sequence's token states become one vector. Its own header, so that format readers
// (sentence-transformers' Pooling config) need not include the encoder.
#pragma once

namespace embedding::model_store {

// kLastToken: the state of the sequence's last real token (the decoders: under a causal mask
// only it has seen the whole text; Qwen3-Embedding's is the <|endoftext|> its tokenizer
// appends). The sequence's own length says which it is, never a padding id.
enum class PoolingMode { kCls, kMean, kMax, kLastToken };

const char* PoolingModeName(PoolingMode mode);

}  // namespace embedding::model_store
