#include "model_store/encoder_outputs.h"

namespace embedding::model_store {

EncodeResult PoolAndMeasure(const torch::Tensor& hidden, const std::vector<int64_t>& offsets,
                            const EncodeBatch& batch) {
  const int64_t batch_size = static_cast<int64_t>(offsets.size()) - 1;
  const torch::Tensor x = hidden.slice(0, 0, offsets.back()).to(torch::kFloat32).contiguous();
  std::vector<torch::Tensor> pooled_rows, hf_rows;
  for (int64_t b = 0; b < batch_size; ++b) {
    const torch::Tensor seq = x.slice(0, offsets[b], offsets[b + 1]);  // [L, H]
    const torch::Tensor mean = seq.mean(0);
    switch (batch.pooling) {
      case PoolingMode::kCls:
        pooled_rows.push_back(seq[0]);
        break;
      case PoolingMode::kMean:
        pooled_rows.push_back(mean);
        break;
      case PoolingMode::kMax:
        pooled_rows.push_back(seq.amax(0));
        break;
    }
    // ||X - 1 mean(X)||_F / ||X||_F: low when the tokens crowd together (length collapse).
    hf_rows.push_back((seq - mean).norm() / seq.norm());
  }
  torch::Tensor pooled = torch::stack(pooled_rows);
  if (batch.normalize) {
    // As torch.nn.functional.normalize(p=2, dim=1, eps=1e-12) computes it.
    pooled = pooled / pooled.norm(2, /*dim=*/1, /*keepdim=*/true).clamp_min(1e-12);
  }
  pooled = pooled.contiguous();
  const torch::Tensor hf_ratio = torch::stack(hf_rows).contiguous();

  EncodeResult result;
  result.dim = x.size(1);
  const float* pooled_data = pooled.data_ptr<float>();
  const float* hf_data = hf_ratio.data_ptr<float>();
  for (int64_t b = 0; b < batch_size; ++b) {
    result.pooled.emplace_back(pooled_data + b * result.dim, pooled_data + (b + 1) * result.dim);
    result.high_frequency_ratio.push_back(hf_data[b]);
  }
  if (batch.return_hidden_states) {
    const float* rows = x.data_ptr<float>();
    for (int64_t b = 0; b < batch_size; ++b) {
      result.hidden_states.emplace_back(rows + offsets[b] * result.dim,
                                        rows + offsets[b + 1] * result.dim);
    }
  }
  return result;
}

}  // namespace embedding::model_store
