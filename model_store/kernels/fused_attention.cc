#include "model_store/kernels/fused_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "model_store/kernels/onednn_support.h"

namespace embedding::model_store {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Queries and keys are padded to multiples of this, so one pair of kernels serves 64 lengths:
// oneDNN 2.6's fast kernels (brgemm) are built per shape, ~15 ms a pair, while its runtime-shape
// kernel (gemm:jit) ran these products with the exponential at half their speed.
constexpr int64_t kShapeStep = 64;
// No weight above e^50: a sum over 2^17 keys of values up to 1e11 stays finite in fp32.
constexpr float kHeadroom = 50;
// A row whose weights sum to at least this (e^-41.6) lost nothing that fp32 could show: with up
// to 2^17 keys its largest weight is at least 2^-77, and the weights flushed to zero (under
// 2^-126) add less than 2^-32 of it. Below it, the plain path takes the row.
constexpr float kSmallestSum = 0x1p-60f;
// Rows per task when preparing keys and queries: a sequence this short stays on one thread.
constexpr int64_t kRowsPerTask = 256;

int64_t RoundUp(int64_t n, int64_t step) { return (n + step - 1) / step * step; }

dnnl::memory::desc RowMajor(int64_t rows, int64_t cols) {
  return dnnl::memory::desc({rows, cols}, dt::f32, tag::ab);
}

struct Kernels {
  dnnl::matmul::primitive_desc weights_pd, context_pd;
  dnnl::matmul weights, context;
};

using Shape = std::tuple<int64_t, int64_t, int64_t>;  // rows, keys, width (head_dim + 1)

PrimitiveCache<Kernels, Shape>& Cache() {
  static auto* const cache = new PrimitiveCache<Kernels, Shape>;
  return *cache;
}

const Kernels& KernelsFor(int64_t rows, int64_t keys, int64_t width) {
  return Cache().Get({rows, keys, width}, [](const Shape& shape) {
    const auto [rows, keys, width] = shape;
    dnnl::post_ops exponential;
    exponential.append_eltwise(1.f, dnnl::algorithm::eltwise_exp, 0.f, 0.f);
    dnnl::primitive_attr exponentiated;
    exponentiated.set_post_ops(exponential);
    exponentiated.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::primitive_attr plain;
    plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    Kernels k;
    // The [keys, width] rows of the keys read as the [width, keys] matrix.
    k.weights_pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(RowMajor(rows, width),
                           dnnl::memory::desc({width, keys}, dt::f32, tag::ba),
                           RowMajor(rows, keys)),
        exponentiated, CpuEngine());
    // Values without a column of ones: with 65 columns this product took 45% longer.
    k.context_pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(RowMajor(rows, keys), RowMajor(keys, width - 1),
                           RowMajor(rows, width - 1)),
        plain, CpuEngine());
    k.weights = dnnl::matmul(k.weights_pd);
    k.context = dnnl::matmul(k.context_pd);
    return k;
  });
}

}  // namespace

FusedAttention::FusedAttention(int64_t length, int64_t head_dim, int64_t query_block, bool causal,
                               int64_t first_query)
    : length_(length),
      head_dim_(head_dim),
      padded_length_(RoundUp(length, kShapeStep)),
      first_query_(first_query),
      causal_(causal),
      stream_(CpuEngine()) {
  const int64_t width = head_dim + 1;
  const int64_t rows = RoundUp(std::min(length - first_query, query_block), kShapeStep);
  keys_ = torch::zeros({padded_length_, width}, torch::kFloat32);
  values_ = torch::zeros({padded_length_, head_dim}, torch::kFloat32);
  queries_ = torch::empty({rows, width}, torch::kFloat32);
  weights_ = torch::empty({rows, padded_length_}, torch::kFloat32);
  context_ = torch::empty({rows, head_dim}, torch::kFloat32);
}

void FusedAttention::SetHead(const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t d = head_dim_, width = d + 1;
  const float* key = k.data_ptr<float>();
  const float* value = v.data_ptr<float>();
  // Summed in double: a mean over thousands of keys.
  const torch::Tensor mean_keys =
      k.sum(0, false, torch::kFloat64).div_(length_).to(torch::kFloat32);
  const float* mean = mean_keys.data_ptr<float>();
  float* keys = keys_.data_ptr<float>();
  float* values = values_.data_ptr<float>();
  std::vector<float> radius_squared(static_cast<size_t>(length_));
  // In parallel: a single thread here left the pool's other thread spinning (a tenth of the
  // pass at 8,192 tokens).
  at::parallel_for(0, length_, kRowsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t j = first; j < last; ++j) {
      const float* kj = key + j * k.stride(0);
      float* key_row = keys + j * width;
      float norm_squared = 0;
      for (int64_t x = 0; x < d; ++x) {
        key_row[x] = kj[x] - mean[x];
        norm_squared += key_row[x] * key_row[x];
      }
      key_row[d] = 1;
      radius_squared[j] = norm_squared;
      std::copy_n(value + j * v.stride(0), d, values + j * d);
    }
  });
  key_radius_ = std::sqrt(*std::max_element(radius_squared.begin(), radius_squared.end()));
}

int64_t FusedAttention::KeysRead(int64_t end) const {
  return causal_ ? RoundUp(end, kShapeStep) : padded_length_;
}

bool FusedAttention::Block(const torch::Tensor& q, int64_t begin, int64_t end, double scale,
                           const torch::Tensor& out) {
  const int64_t d = head_dim_, width = d + 1, rows = end - begin;
  const int64_t padded_rows = RoundUp(rows, kShapeStep);
  const float s = static_cast<float>(scale);
  const float* query = q.data_ptr<float>();
  const int64_t position = first_query_ + begin;  // of the block's first query
  const float* keys = keys_.data_ptr<float>();
  float* queries = queries_.data_ptr<float>();
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const float* qi = query + (begin + i) * q.stride(0);
      const float* own_key = keys + (position + i) * width;
      float* row = queries + i * width;
      float norm_squared = 0, own_logit = 0;
      for (int64_t x = 0; x < d; ++x) {
        row[x] = s * qi[x];
        norm_squared += qi[x] * qi[x];
        own_logit += row[x] * own_key[x];
      }
      row[d] = -std::max(own_logit, s * std::sqrt(norm_squared) * key_radius_ - kHeadroom);
    }
  });
  std::fill(queries + rows * width, queries + padded_rows * width, 0.f);  // rows left unread

  const int64_t keys_read = KeysRead(position + rows);
  const Kernels& k = KernelsFor(padded_rows, keys_read, width);
  const torch::Tensor weights_scratch = Scratchpad(k.weights_pd);
  const torch::Tensor context_scratch = Scratchpad(k.context_pd);
  // The block's [padded_rows, keys_read] weights, row-major at the front of the buffer.
  const torch::Tensor block_weights =
      weights_.view(-1).slice(0, 0, padded_rows * keys_read).view({padded_rows, keys_read});
  dnnl::stream& stream = stream_;
  const dnnl::memory weights = AsMemory(k.weights_pd.dst_desc(), block_weights);
  k.weights.execute(
      stream, {{DNNL_ARG_SRC, AsMemory(k.weights_pd.src_desc(), queries_)},
               {DNNL_ARG_WEIGHTS, AsMemory(k.weights_pd.weights_desc(), keys_)},
               {DNNL_ARG_DST, weights},
               {DNNL_ARG_SCRATCHPAD, AsMemory(k.weights_pd.scratchpad_desc(), weights_scratch)}});
  if (causal_) {
    stream.wait();
    // Row i keeps keys j <= position + i: zero the rest of the block's diagonal square (and the
    // keys past it up to the shape step, padding keys included).
    float* w = block_weights.data_ptr<float>();
    at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        std::fill(w + i * keys_read + position + i + 1, w + (i + 1) * keys_read, 0.f);
      }
    });
  }
  k.context.execute(
      stream, {{DNNL_ARG_SRC, weights},
               {DNNL_ARG_WEIGHTS, AsMemory(k.context_pd.weights_desc(), values_)},
               {DNNL_ARG_DST, AsMemory(k.context_pd.dst_desc(), context_)},
               {DNNL_ARG_SCRATCHPAD, AsMemory(k.context_pd.scratchpad_desc(), context_scratch)}});
  stream.wait();
  // Each row's sum over the keys it attends: a padding key's weight is exp(0), and under a
  // causal mask the keys past the row are zero already.
  const torch::Tensor sums =
      block_weights.slice(0, 0, rows).slice(1, 0, std::min(length_, keys_read)).sum(1);
  const float* sum = sums.data_ptr<float>();
  const float* context = context_.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    if (!(sum[i] >= kSmallestSum) || !std::isfinite(sum[i])) return false;  // also NaN
    for (int64_t x = 0; x < d; ++x) {
      if (!std::isfinite(context[i * d + x])) return false;
    }
  }
  float* result = out.data_ptr<float>();
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const float inverse_sum = 1.f / sum[i];
      float* out_row = result + (begin + i) * out.stride(0);
      for (int64_t x = 0; x < d; ++x) out_row[x] = context[i * d + x] * inverse_sum;
    }
  });
  return true;
}

size_t FusedAttention::primitives() { return Cache().size(); }

}  // namespace embedding::model_store
