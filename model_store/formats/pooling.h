// How a sequence's token states become one vector. Its own header, so that format readers
// (sentence-transformers' Pooling config) need not include the encoder.
#pragma once

namespace embedding::model_store {

enum class PoolingMode { kCls, kMean, kMax };

const char* PoolingModeName(PoolingMode mode);

}  // namespace embedding::model_store
