// The client's bge-m3 scoring helpers on hand-made messages whose scores are worked out here.
#include "client/hybrid_scoring.h"

#include <gtest/gtest.h>

namespace embedding::client {
namespace {

v1::SparseEmbedding Sparse(std::vector<std::pair<uint32_t, float>> entries) {
  v1::SparseEmbedding s;
  for (auto [id, w] : entries) {
    s.add_token_ids(id);
    s.add_weights(w);
  }
  return s;
}

v1::MultiVector Float32(std::vector<std::vector<float>> rows) {
  v1::MultiVector mv;
  mv.set_count(static_cast<uint32_t>(rows.size()));
  mv.set_dimensions(static_cast<uint32_t>(rows[0].size()));
  for (const auto& r : rows)
    for (float v : r) mv.add_values(v);
  return mv;
}

TEST(HybridScoringTest, LexicalIsTheSharedIdsWeightProducts) {
  EXPECT_DOUBLE_EQ(LexicalScore(Sparse({{5, 0.5f}, {7, 0.2f}}), Sparse({{7, 0.3f}, {9, 1.0f}})),
                   double{0.2f} * double{0.3f});
  EXPECT_EQ(LexicalScore(Sparse({{5, 0.5f}}), Sparse({{6, 0.5f}})), 0.0);
}

TEST(HybridScoringTest, ColbertIsTheMeanBestInnerProduct) {
  const auto q = Float32({{1, 0}, {0, 1}});
  // Best for [1, 0] is 1 (second row), for [0, 1] is 0.8 (first row).
  EXPECT_NEAR(ColbertScore(q, Float32({{0.6f, 0.8f}, {1, 0}})), 0.9, 1e-7);
  EXPECT_EQ(ColbertScore(q, v1::MultiVector()), 0.0);
}

TEST(HybridScoringTest, DecodesFloat16AndInt8) {
  v1::MultiVector half;
  half.set_count(1);
  half.set_dimensions(2);
  half.set_encoding(v1::VECTOR_ENCODING_FLOAT16);
  half.set_data(std::string("\xcd\x38\x66\x3a", 4));  // 0x38CD, 0x3A66: 0.6 and 0.8 as binary16
  auto rows = MultiVectorRows(half);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FLOAT_EQ(rows[0][0], 0.60009765625f);
  EXPECT_FLOAT_EQ(rows[0][1], 0.7998046875f);

  v1::MultiVector q8;
  q8.set_count(2);
  q8.set_dimensions(2);
  q8.set_encoding(v1::VECTOR_ENCODING_INT8);
  q8.set_data(std::string("\x7f\x81\x00\x40", 4));  // 127, -127, 0, 64
  q8.add_scales(0.5f);
  q8.add_scales(0.25f);
  rows = MultiVectorRows(q8);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FLOAT_EQ(rows[0][0], 63.5f);
  EXPECT_FLOAT_EQ(rows[0][1], -63.5f);
  EXPECT_FLOAT_EQ(rows[1][1], 16.0f);
  q8.clear_scales();  // inconsistent: no rows rather than a guess
  EXPECT_TRUE(MultiVectorRows(q8).empty());
}

TEST(HybridScoringTest, HybridWeighsTheOutputsBothCarry) {
  v1::DocumentEmbedding q, d;
  q.add_vector(1);
  q.add_vector(0);
  d.add_vector(0.6f);
  d.add_vector(0.8f);
  EXPECT_NEAR(HybridScore(q, d), 0.6, 1e-7);  // dense only
  *q.mutable_sparse() = Sparse({{7, 0.2f}});
  *d.mutable_sparse() = Sparse({{7, 0.3f}});
  *q.mutable_multi_vector() = Float32({{1, 0}, {0, 1}});
  *d.mutable_multi_vector() = Float32({{0.6f, 0.8f}, {1, 0}});
  EXPECT_NEAR(HybridScore(q, d), 0.4 * 0.6 + 0.2 * 0.06 + 0.4 * 0.9, 1e-6);
  EXPECT_NEAR(HybridScore(q, d, {1, 0, 0}), 0.6, 1e-7);
}

}  // namespace
}  // namespace embedding::client
