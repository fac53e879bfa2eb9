#include "model_store/attention.h"

#include <algorithm>

namespace embedding::model_store {
namespace {

// fp32 through oneDNN, one head at a time: LibTorch 1.13 without MKL runs a batched fp32
// matmul as a loop of BLAS calls, and Debian's OpenBLAS 0.3.21 takes this CPU for a Prescott
// (no AVX). On [12 heads, L, 64] at 2 threads: 11.9 ms against 41.7 through bmm at L = 512,
// 504 against 1,361 at L = 4,096 (blocks of 128). K and V^T are converted once per head.
torch::Tensor OneDnnPerHead(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            double scale, int64_t query_block) {
  const int64_t length = q.size(1);
  const torch::Tensor values_t = v.transpose(1, 2).contiguous();  // [heads, d, L]
  torch::Tensor out = torch::empty_like(q);
  for (int64_t h = 0; h < q.size(0); ++h) {
    // mkldnn_linear(x, w) is x w^T: with w = K it gives Q K^T, with w = V^T it gives P V.
    const torch::Tensor keys = k[h].to_mkldnn();
    const torch::Tensor values = values_t[h].to_mkldnn();
    for (int64_t begin = 0; begin < length; begin += query_block) {
      const int64_t end = std::min(length, begin + query_block);
      torch::Tensor scores =
          at::mkldnn_linear((q[h].slice(0, begin, end) * scale).to_mkldnn(), keys, {}).to_dense();
      out[h].slice(0, begin, end).copy_(
          at::mkldnn_linear(torch::softmax(scores, -1).to_mkldnn(), values, {}).to_dense());
    }
  }
  return out;
}

}  // namespace

torch::Tensor BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, double scale, int64_t query_block) {
  if (q.scalar_type() == torch::kFloat32 && at::hasMKLDNN())
    return OneDnnPerHead(q, k, v, scale, query_block);
  // bf16: batched over heads, which LibTorch sends to oneDNN whole (7.6 ms at L = 512 against
  // 10.8 ms one head at a time).
  const int64_t length = q.size(1);
  const torch::Tensor keys_t = k.transpose(1, 2);  // [heads, d, L]
  torch::Tensor out = torch::empty_like(q);
  for (int64_t begin = 0; begin < length; begin += query_block) {
    const int64_t end = std::min(length, begin + query_block);
    // Scaling the [block x d] queries costs less than scaling the [block x L] scores.
    torch::Tensor scores = torch::bmm(q.slice(1, begin, end) * scale, keys_t);
    out.slice(1, begin, end).copy_(torch::bmm(torch::softmax(scores, -1), v));
  }
  return out;
}

}  // namespace embedding::model_store
