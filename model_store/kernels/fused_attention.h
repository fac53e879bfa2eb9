// Internal to model_store: fp32 attention for one sequence with the softmax folded into its two
// products, so a block's [queries x L] weights are written once and read once, with no pass of
// their own (over an 8,192-token window the separate softmax took a fifth of attention's time,
// by oneDNN's verbose log, and left its next product to read the weights from beyond L2).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

namespace embedding::model_store {

// How it stays exact. Softmax is unchanged by subtracting any constant from a row of logits.
// Row i subtracts q_i . c (c: the mean key, so what all keys share leaves the bound below) and
// b_i, a stand-in for the row's maximum, so its weights are
// exp(scale q_i . (k_j - c) - b_i): the first product computes them with queries [scale q_i,
// -b_i] against keys [k_j - c, 1], exponentiated in its epilogue; the second multiplies them by
// the values, and each row is divided by its weights' sum. b_i is the larger of row i's own
// logit with key i (no more than the maximum, so the largest weight is at least 1) and a
// Cauchy-Schwarz bound on the maximum less a headroom (no weight above e^headroom). A row
// whose weights still leave fp32's range (the bound far above the maximum: huge vectors, a
// tiny tau) is reported, and the caller computes its block the plain way. A causal call reads
// only the keys up to its block's end (rounded up to the shape step) and zeroes the weights past
// each row's own position before the second product: half the work of a bidirectional window.
class FusedAttention {
 public:
  // For one sequence of `length` tokens, heads of width `head_dim`, at most `query_block`
  // queries at a time; `causal`: query i reads keys j <= i only. The queries are the sequence's
  // positions from `first_query` on (0, or where a continuation after cached prefix keys
  // begins): row r of Block's `q` and `out` is position first_query + r. Holds its buffers (one
  // head's keys and values, one block's weights).
  FusedAttention(int64_t length, int64_t head_dim, int64_t query_block, bool causal,
                 int64_t first_query);

  // Takes one head's keys and values ([L, d] fp32 views, unit stride in the last dimension)
  // for the blocks that follow.
  void SetHead(const torch::Tensor& k, const torch::Tensor& v);

  // Writes softmax(q[begin:end] K^T * scale) V into out[begin:end] ([queries, d] fp32 views) and
  // returns true; or returns false, with `out` untouched, when a row's weights left fp32's
  // range. `end - begin` is at most `query_block`.
  bool Block(const torch::Tensor& q, int64_t begin, int64_t end, double scale,
             const torch::Tensor& out);

  // Distinct shapes built since the process started (each a pair of oneDNN kernels).
  static size_t primitives();

 private:
  // The keys block [begin, end) reads: every one, or under a causal mask those before `end`
  // rounded up to the shape step (the weights past each row's position are zeroed).
  int64_t KeysRead(int64_t end) const;

  int64_t length_, head_dim_, padded_length_;  // padded_length_: a multiple of the shape step
  int64_t first_query_;
  bool causal_;
  // Centred keys with a column of ones [padded_length_, d + 1], and values [padded_length_, d].
  // Padding rows are zero: their weight is exp(0), left out of the sums, times a zero value.
  torch::Tensor keys_, values_;
  // One block: queries [rows, d + 1], weights [rows, padded_length_], context [rows, d].
  torch::Tensor queries_, weights_, context_;
  float key_radius_ = 0;  // max_j |k_j - c|
  dnnl::stream stream_;   // one per sequence, as every block runs on it
};

}  // namespace embedding::model_store
