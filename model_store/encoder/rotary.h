// Internal to model_store: rotary position embeddings on queries and keys (NomicBert, GTE),
// with dynamic NTK scaling past the trained length (NomicBert) or static NTK scaling at every
// length (GTE). Included only by encoder*.cc.
#pragma once

#include <torch/types.h>

#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

class RotaryEmbedding {
 public:
  // Angles for one sequence: cos and sin, each [L, dim / 2], fp32.
  struct Angles {
    torch::Tensor cos;
    torch::Tensor sin;
  };

  // Precomputes the unscaled angles of `max_length` positions. `config.dim` must be > 0.
  RotaryEmbedding(const RotaryConfig& config, int64_t max_length);

  // The angles of a sequence of `length` tokens. Its own length decides the NTK base, never the
  // batch's longest: a sequence embeds the same alone or batched. Thread-safe.
  Angles For(int64_t length) const;

  // Rotates the first `dim` features of x [heads, L, head_dim] in place: x is a view into the
  // layer's QKV projection, so a rotated copy of the queries and keys (2 x 25 MB at 8,192
  // tokens and base width) never exists. Any strides.
  void ApplyInPlace(torch::Tensor& x, const Angles& angles) const;

 private:
  Angles Compute(double base, int64_t length) const;
  // The base the table starts from: GTE's static NTK multiplies it by its factor.
  static double BaseBeforeScaling(const RotaryConfig& config);

  RotaryConfig config_;
  Angles table_;  // base angles for every position up to max_length
};

}  // namespace embedding::model_store
