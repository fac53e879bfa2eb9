#include "model_store/attention.h"

#include <algorithm>

namespace embedding::model_store {

torch::Tensor BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, double scale, int64_t query_block) {
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
