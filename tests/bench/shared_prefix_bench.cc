// What computing a shared prefix once saves a causal reranker. One query's part of the pair
// (Qwen3-Reranker's system line, instruction and query: about 80 tokens) before each of the
// documents, then the prompt's suffix; the pairs cut into batches by the batcher's token budget
// (whole pair lengths, as the batcher counts them). Each batch is encoded with
// EncodeBatch::prefix_lengths (the prefix once per batch, as the server runs pairs) and
// without (every pair whole), the two interleaved in rounds on the same model and ids. Prints
// each round's seconds, the ratio, and the worst |difference| between the two ways' pooled
// states relative to their largest value.
//   shared_prefix_bench MODEL_DIR fp32|bf16|int8 DOCUMENTS PREFIX DOCUMENT_TOKENS ROUNDS
// MODEL_DIR: a causal model (docs/reranking.md gives the Qwen3-Reranker-shaped one).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "model_store/kernels/cpu_features.h"
#include "model_store/model.h"

namespace embedding::model_store {
namespace {

constexpr int kSuffixTokens = 12;          // "<|im_end|>\n<|im_start|>assistant\n<think>..."
constexpr int64_t kMaxBatchTokens = 2048;  // the batcher's default budget

double Seconds(const Model& model, const std::vector<EncodeBatch>& batches,
               std::vector<std::vector<float>>* pooled) {
  const auto start = std::chrono::steady_clock::now();
  pooled->clear();
  for (const EncodeBatch& batch : batches) {
    auto result = model.encoder().Encode(batch);
    if (!result.ok()) {
      std::cerr << result.status() << "\n";
      std::exit(1);
    }
    for (auto& row : result->pooled) pooled->push_back(std::move(row));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Run(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: shared_prefix_bench MODEL_DIR fp32|bf16|int8 DOCUMENTS PREFIX "
                 "DOCUMENT_TOKENS ROUNDS\n";
    return 2;
  }
  ModelOptions options;
  const auto dtype = ComputeDTypeNamed(argv[2]);
  if (!dtype || *dtype == ComputeDType::kAuto) {
    std::cerr << "dtype " << argv[2] << ": allowed fp32, bf16, int8\n";
    return 2;
  }
  options.encoder.dtype = *dtype;
  options.encoder.intra_op_threads = 2;
  auto model = Model::Load(argv[1], options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  if (!(*model)->config().causal) {
    std::cerr << argv[1] << ": not a causal model; a bidirectional one shares nothing\n";
    return 2;
  }
  const int documents = std::atoi(argv[3]), prefix = std::atoi(argv[4]);
  const int document_tokens = std::atoi(argv[5]), rounds = std::atoi(argv[6]);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> id(5, (*model)->config().vocab_size - 1);
  auto tokens = [&](int count) {
    std::vector<int32_t> ids(count);
    for (auto& v : ids) v = id(rng);
    return ids;
  };
  const std::vector<int32_t> query_part = tokens(prefix), suffix = tokens(kSuffixTokens);
  std::vector<EncodeBatch> shared, whole;
  int64_t batch_tokens = 0, pair_tokens = 0;
  for (int d = 0; d < documents; ++d) {
    std::vector<int32_t> pair = query_part;
    const std::vector<int32_t> document = tokens(document_tokens);
    pair.insert(pair.end(), document.begin(), document.end());
    pair.insert(pair.end(), suffix.begin(), suffix.end());
    const auto length = static_cast<int64_t>(pair.size());
    if (shared.empty() || batch_tokens + length > kMaxBatchTokens) {
      shared.emplace_back();
      shared.back().pooling = PoolingMode::kLastToken;
      batch_tokens = 0;
    }
    batch_tokens += length;
    pair_tokens += length;
    shared.back().sequences.push_back(std::move(pair));
    shared.back().temperatures.push_back(1.0f);
    shared.back().prefix_lengths.push_back(prefix);
  }
  for (const EncodeBatch& batch : shared) {
    whole.push_back(batch);
    whole.back().prefix_lengths.clear();
  }
  std::cout << CpuIsa() << ", 2 threads, " << ComputeDTypeName(*dtype) << ": " << documents
            << " pairs of " << prefix << " + " << document_tokens << " + " << kSuffixTokens
            << " tokens in " << shared.size() << " batches (" << pair_tokens << " tokens)\n";
  std::vector<std::vector<float>> with_sharing, without;
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    const double whole_seconds = Seconds(**model, whole, &without);
    const double shared_seconds = Seconds(**model, shared, &with_sharing);
    ratios.push_back(whole_seconds / shared_seconds);
    std::cout << "round " << r + 1 << ": whole " << whole_seconds << " s, prefix once "
              << shared_seconds << " s: " << ratios.back() << "x\n";
  }
  float worst = 0, largest = 0;
  for (size_t i = 0; i < without.size(); ++i) {
    for (size_t j = 0; j < without[i].size(); ++j) {
      worst = std::max(worst, std::abs(without[i][j] - with_sharing[i][j]));
      largest = std::max(largest, std::abs(without[i][j]));
    }
  }
  std::sort(ratios.begin(), ratios.end());
  std::cout << "median " << ratios[ratios.size() / 2] << "x; pooled states differ by at most "
            << worst / largest << " of their largest value\n";
  return 0;
}

}  // namespace
}  // namespace embedding::model_store

int main(int argc, char** argv) { return embedding::model_store::Run(argc, argv); }
