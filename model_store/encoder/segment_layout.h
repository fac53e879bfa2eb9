// Internal to model_store: how a batch's sequences become the forward pass's segments. Each
// sequence is one segment, except that a causal model computes each distinct shared prefix
// (EncodeBatch::prefix_lengths) once, as a segment of its own, and each sequence's rest after
// it. Included only by encoder.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "model_store/encoder/encoder.h"

namespace embedding::model_store {

struct Segment {
  int64_t sequence = 0;        // the batch's sequence whose tokens it holds
  int64_t begin = 0, end = 0;  // those tokens: [begin, end) of the sequence
  int64_t prefix = -1;         // the earlier segment whose keys and values come first, or -1
  bool is_prefix = false;      // a later segment reads its keys and values
};

struct SegmentLayout {
  std::vector<Segment> segments;  // in batch order, each prefix before its first reader
  // The row, in the segments packed back to back, where each token of each sequence (in batch
  // order) is computed. Empty when every segment is a whole sequence: the rows are the batch's.
  std::vector<int64_t> token_rows;
};

// Splits where `share_prefixes` (the model is causal) and the batch gives prefixes. Prefixes
// are the same when their ids, token types, both temperatures and adapter are: all a prefix's
// hidden states depend on. `batch` has passed the encoder's validation.
SegmentLayout LayOutSegments(const EncodeBatch& batch, bool share_prefixes);

}  // namespace embedding::model_store
