#include "model_store/encoder/encoder_outputs.h"

namespace embedding::model_store {

namespace {

std::vector<float> ToVector(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  const float* data = c.data_ptr<float>();
  return std::vector<float>(data, data + c.numel());
}

// bge-m3's heads on one sequence's states [L, H] (FlagEmbedding's BGEM3 model): a lexical
// weight ReLU(w . h_t + b) per token, and a vector W h_t + b per token, L2-normalised; or a
// ColBERT model's projection of each token, L2-normalised (PyLate's encode, ColBERT's
// Checkpoint).
void ApplyTokenHeads(const torch::Tensor& seq, const TokenOutputs& wants, const TokenHeads& heads,
                     std::vector<float>* weights, std::vector<float>* vectors) {
  if (wants.sparse) {
    *weights = ToVector(torch::relu(torch::addmm(heads.sparse_bias, seq, heads.sparse_weight.t())));
  }
  if (wants.multi_vector) {
    torch::Tensor v = heads.late_projection.empty()
                          ? torch::addmm(heads.colbert_bias, seq, heads.colbert_weight.t())
                          : ProjectTokens(heads.late_projection, seq);
    v = v / v.norm(2, /*dim=*/1, /*keepdim=*/true).clamp_min(1e-12);
    *vectors = ToVector(v);
  }
}

}  // namespace

EncodeResult PoolAndMeasure(const torch::Tensor& hidden, const std::vector<int64_t>& offsets,
                            const EncodeBatch& batch, const TokenHeads* heads,
                            const SpladeHead* splade, const std::vector<DenseLayer>* dense) {
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
      case PoolingMode::kLastToken:
        pooled_rows.push_back(seq[seq.size(0) - 1]);
        break;
    }
    // ||X - 1 mean(X)||_F / ||X||_F: low when the tokens crowd together (length collapse).
    hf_rows.push_back((seq - mean).norm() / seq.norm());
  }
  torch::Tensor pooled = torch::stack(pooled_rows);
  if (dense != nullptr) pooled = ApplyDenseLayers(*dense, pooled);
  if (batch.normalize) {
    // As torch.nn.functional.normalize(p=2, dim=1, eps=1e-12) computes it.
    pooled = pooled / pooled.norm(2, /*dim=*/1, /*keepdim=*/true).clamp_min(1e-12);
  }
  pooled = pooled.contiguous();
  const torch::Tensor hf_ratio = torch::stack(hf_rows).contiguous();

  EncodeResult result;
  result.dim = x.size(1);
  const float* pooled_data = pooled.data_ptr<float>();
  const int64_t pooled_dim = pooled.size(1);  // hidden, or the last Dense module's width
  const float* hf_data = hf_ratio.data_ptr<float>();
  for (int64_t b = 0; b < batch_size; ++b) {
    result.pooled.emplace_back(pooled_data + b * pooled_dim, pooled_data + (b + 1) * pooled_dim);
    result.high_frequency_ratio.push_back(hf_data[b]);
  }
  if (batch.return_hidden_states) {
    const float* rows = x.data_ptr<float>();
    for (int64_t b = 0; b < batch_size; ++b) {
      result.hidden_states.emplace_back(rows + offsets[b] * result.dim,
                                        rows + offsets[b + 1] * result.dim);
    }
  }
  if (!batch.token_outputs.empty()) {
    result.token_weights.resize(batch_size);
    result.token_vectors.resize(batch_size);
    if (splade != nullptr) result.vocabulary_sparse.resize(batch_size);
    for (int64_t b = 0; b < batch_size; ++b) {
      const TokenOutputs& wants = batch.token_outputs[b];
      if (splade != nullptr) {
        if (wants.sparse)
          result.vocabulary_sparse[b] =
              ApplySpladeHead(*splade, x.slice(0, offsets[b], offsets[b + 1]));
        continue;
      }
      if (heads == nullptr || (!wants.sparse && !wants.multi_vector)) continue;
      ApplyTokenHeads(x.slice(0, offsets[b], offsets[b + 1]), wants, *heads,
                      &result.token_weights[b], &result.token_vectors[b]);
    }
  }
  return result;
}

}  // namespace embedding::model_store
