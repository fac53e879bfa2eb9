#include "model_store/encoder/rotary.h"

#include <cmath>

namespace embedding::model_store {

RotaryEmbedding::RotaryEmbedding(const RotaryConfig& config, int64_t max_length)
    : config_(config), table_(Compute(BaseBeforeScaling(config), max_length)) {}

double RotaryEmbedding::BaseBeforeScaling(const RotaryConfig& config) {
  return config.static_ntk_factor > 0 ? config.base * config.static_ntk_factor : config.base;
}

// Inverse frequencies in fp32 as the published implementations compute them. The angles t x f
// in fp32 too for the encoder families, whose published code rounds them so (part of those
// models); with exact_angles in fp64 (decoders' 32k windows: fp32 is 2e-3 radians off there).
RotaryEmbedding::Angles RotaryEmbedding::Compute(double base, int64_t length) const {
  const auto fp32 = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor exponents = torch::arange(0, config_.dim, 2, fp32) / config_.dim;
  torch::Tensor inv_freq = 1.0 / torch::pow(base, exponents);
  if (config_.static_ntk_factor > 0) {  // GTE: (base f)^(-2i/dim) / f^(2/dim)
    inv_freq = inv_freq / std::pow(config_.static_ntk_factor, 2.0 / config_.dim);
  }
  const auto angle_type = config_.exact_angles ? torch::kFloat64 : torch::kFloat32;
  const torch::Tensor freqs =
      torch::outer(torch::arange(length, angle_type), inv_freq.to(angle_type));
  return {torch::cos(freqs).to(torch::kFloat32).contiguous(),
          torch::sin(freqs).to(torch::kFloat32).contiguous()};
}

RotaryEmbedding::Angles RotaryEmbedding::For(int64_t length) const {
  const double factor = config_.scaling_factor;
  const auto trained = config_.max_trained_positions;
  if (factor > 0 && length > trained) {
    const double dim = static_cast<double>(config_.dim);
    const double base = config_.base * std::pow(factor * static_cast<double>(length) /
                                                        static_cast<double>(trained) -
                                                    (factor - 1.0),
                                                dim / (dim - 2.0));
    return Compute(base, length);
  }
  if (length > table_.cos.size(0)) return Compute(BaseBeforeScaling(config_), length);
  return {table_.cos.slice(0, 0, length), table_.sin.slice(0, 0, length)};
}

void RotaryEmbedding::ApplyInPlace(torch::Tensor& x, const Angles& angles) const {
  // In place and every head at once: the one temporary is the first half's copy, [heads, L,
  // dim / 2] (12 MB at 8,192 tokens and 12 heads of 64 in fp32). Rotating head by head out of
  // place took about ten ops a head, 70 ms of a 1.8 s GTE-base forward at 2,048 tokens.
  const torch::Tensor cos = angles.cos.to(x.scalar_type());
  const torch::Tensor sin = angles.sin.to(x.scalar_type());
  const int64_t dim = config_.dim;
  const torch::Tensor rotated = x.slice(-1, 0, dim);
  torch::Tensor first =
      config_.interleaved ? rotated.slice(-1, 0, dim, 2) : rotated.slice(-1, 0, dim / 2);
  torch::Tensor second =
      config_.interleaved ? rotated.slice(-1, 1, dim, 2) : rotated.slice(-1, dim / 2, dim);
  const torch::Tensor first_before = first.clone();
  first.mul_(cos).addcmul_(second, sin, -1);        // first cos - second sin
  second.mul_(cos).addcmul_(first_before, sin, 1);  // second cos + first sin
}

}  // namespace embedding::model_store
