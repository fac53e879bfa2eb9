// The blocked attention against the plain formula softmax((Q K^T / sqrt(d) + mask) / tau) V,
// and its memory bound at 8,192 tokens.
#include "model_store/kernels/attention.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "model_store/kernels/fused_attention.h"

namespace embedding::model_store {
namespace {

// The textbook computation on a padded batch: full score matrix, -inf on padded keys.
torch::Tensor PlainAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& key_mask, double tau) {
  const double d = static_cast<double>(q.size(-1));
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(d);
  scores = scores.masked_fill(key_mask.logical_not(), -INFINITY);
  return torch::matmul(torch::softmax(scores / tau, -1), v);
}

// Every query head its own key/value head (a group of one), as the encoder families attend.
void Attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
            int64_t block, const AttentionPattern& pattern, const torch::Tensor& out) {
  torch::Tensor grouped = out.unsqueeze(1);
  BlockedSelfAttention(q.unsqueeze(1), k, v, scale, block, pattern, grouped);
}

// fp32 (oneDNN, one head at a time) to 1e-5; bf16 (batched over heads) to 0.2: at tau 0.2
// its logits reach about 20, where bf16's 8-bit mantissa alone moves a weight by 6%. (The
// encoder's pooled-cosine guard bounds what that does to an embedding.)
TEST(BlockedSelfAttention, EqualsThePlainFormulaForEveryBlockSizeAndTemperature) {
  torch::manual_seed(3);
  const int64_t heads = 3, d = 16, padded = 70;
  for (auto [dtype_case, tolerance] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 2e-1}}) {
    const auto dtype = dtype_case;  // a plain variable: lambdas may not capture bindings (C++17)
    for (int64_t length : {1, 5, 64, 70}) {
      for (int64_t block : {1, 7, 64, 128}) {
        for (double tau : {1.0, 0.7, 0.2, 2.5}) {
          // One real sequence of `length` tokens inside a padded batch row of 70, its heads
          // laid out as the encoder's projection holds them ([L, 3, heads, d]) and read in
          // place. Drawn in `dtype`, so the plain formula (in fp32) sees the same inputs.
          const torch::Tensor packed =
              torch::randn({padded, 3, heads, d}).to(dtype).to(torch::kFloat32);
          auto head_view = [&](int64_t i) { return packed.select(1, i).transpose(0, 1); };
          torch::Tensor mask = torch::arange(padded).lt(length).view({1, 1, padded});
          torch::Tensor expected =
              PlainAttention(head_view(0).contiguous(), head_view(1).contiguous(),
                             head_view(2).contiguous(), mask, tau)
                  .slice(1, 0, length);
          const torch::Tensor real = packed.slice(0, 0, length).to(dtype);
          // Written into a [L, heads x d] context, as the encoder's next layer reads it.
          torch::Tensor context = torch::full({length, heads * d}, NAN, real.options());
          torch::Tensor out = context.view({length, heads, d}).transpose(0, 1);
          auto real_head = [&](int64_t i) { return real.select(1, i).transpose(0, 1); };
          Attend(real_head(0), real_head(1), real_head(2), 1.0 / (std::sqrt(double(d)) * tau),
                 block, {}, out);
          const torch::Tensor actual = context.view({length, heads, d}).transpose(0, 1);
          EXPECT_EQ(actual.scalar_type(), dtype);
          EXPECT_LT((actual.to(torch::kFloat32) - expected).abs().max().item<float>(), tolerance)
              << dtype << " length " << length << " block " << block << " tau " << tau;
        }
      }
    }
  }
}

// Attention whose logits get an additive term per head: `bias(length)` [heads, L, L] added to
// Q K^T / sqrt(d), all divided by tau, against the formula on a full score matrix; the kernel
// gets `pattern(tau)`. Both dtypes and both paths (bf16 batches the heads under 512 keys).
void ExpectAddsBias(int64_t heads, const std::function<torch::Tensor(int64_t)>& bias,
                    const std::function<AttentionPattern(double)>& pattern) {
  const int64_t d = 16;
  for (auto [dtype_case, tolerance] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 2e-1}}) {
    const auto dtype = dtype_case;
    for (int64_t length : {1, 9, 300, 700}) {
      const torch::Tensor added = bias(length);
      for (double tau : {1.0, 0.5}) {
        const torch::Tensor packed =
            torch::randn({length, 3, heads, d}).to(dtype).to(torch::kFloat32);
        auto head_view = [&](const torch::Tensor& t, int64_t i) {
          return t.select(1, i).transpose(0, 1);
        };
        const torch::Tensor q = head_view(packed, 0), k = head_view(packed, 1);
        const torch::Tensor logits =
            torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(d)) + added;
        const torch::Tensor expected =
            torch::matmul(torch::softmax(logits / tau, -1), head_view(packed, 2));
        const torch::Tensor real = packed.to(dtype);
        torch::Tensor context = torch::full({length, heads * d}, NAN, real.options());
        torch::Tensor out = context.view({length, heads, d}).transpose(0, 1);
        Attend(head_view(real, 0), head_view(real, 1), head_view(real, 2),
               1.0 / (std::sqrt(double(d)) * tau), 256, pattern(tau), out);
        const torch::Tensor actual = context.view({length, heads, d}).transpose(0, 1);
        EXPECT_LT((actual.to(torch::kFloat32) - expected).abs().max().item<float>(), tolerance)
            << dtype << " length " << length << " tau " << tau;
      }
    }
  }
}

// Symmetric ALiBi (JinaBERT v2): -m_h |i - j| on every logit, head by head, after the scale.
TEST(BlockedSelfAttention, AlibiAddsEachHeadsSlopeTimesTheDistance) {
  torch::manual_seed(5);
  const std::vector<double> slopes = {0.5, 0.25, 0.0625, 0.0078125};
  ExpectAddsBias(
      4,
      [&](int64_t length) {
        const torch::Tensor positions = torch::arange(length, torch::kFloat32);
        const torch::Tensor distance = (positions.unsqueeze(1) - positions.unsqueeze(0)).abs();
        return -torch::tensor(slopes).to(torch::kFloat32).view({4, 1, 1}) * distance;
      },
      [&](double tau) {
        std::vector<double> scaled;
        for (double m : slopes) scaled.push_back(m / tau);
        return AttentionPattern{scaled};
      });
}

// transformers' MPNet bucketing, one offset at a time in doubles: n = i - j; keys after the
// query in the upper half; exact below 8, then 8 + floor(log(n / 8) / log(16) * 8), at most 15.
int64_t MpnetBucket(int64_t offset) {
  const int64_t n = -offset, upper = n < 0 ? 16 : 0, distance = std::abs(n);
  if (distance < 8) return upper + distance;
  const auto large = static_cast<int64_t>(std::log(distance / 8.0) / std::log(16.0) * 8.0);
  return upper + std::min<int64_t>(8 + large, 15);
}

// MPNet's relative position bias: table[h][bucket(j - i)] on every logit, divided by tau with
// it; and the buckets themselves, offset by offset.
TEST(BlockedSelfAttention, RelativeBiasAddsEachHeadsBucketValue) {
  torch::manual_seed(6);
  const torch::Tensor table = torch::randn({4, 32});
  ExpectAddsBias(
      4,
      [&](int64_t length) {
        torch::Tensor buckets = torch::empty({length, length}, torch::kLong);
        for (int64_t i = 0; i < length; ++i) {
          for (int64_t j = 0; j < length; ++j) buckets[i][j] = MpnetBucket(j - i);
        }
        return table.index_select(1, buckets.flatten()).view({4, length, length});
      },
      [&](double tau) {
        AttentionPattern pattern;
        pattern.relative_bias = table / tau;
        return pattern;
      });
  // Far keys share the last bucket of their side; the first eight distances are exact.
  const torch::Tensor offsets = torch::arange(-400, 401, torch::kFloat32);
  const torch::Tensor got = RelativePositionBuckets(offsets, 32, 128);
  for (int64_t o = -400; o <= 400; ++o) {
    EXPECT_EQ(got[o + 400].item<int64_t>(), MpnetBucket(o)) << o;
  }
}

// A local layer's band (ModernBERT): query i attends keys |i - j| <= band only, key i + band
// inside and i + band + 1 outside, whatever the block, tau and dtype, against the formula on a
// full score matrix with the band's mask.
TEST(BlockedSelfAttention, ABandAttendsExactlyTheKeysWithinItsHalfWidth) {
  torch::manual_seed(9);
  const int64_t heads = 2, d = 16, band = 8;
  for (auto [dtype_case, tolerance] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 2e-1}}) {
    const auto dtype = dtype_case;
    for (int64_t length : {1, 9, 17, 100, 600}) {
      for (int64_t block : {1, 16, 64}) {
        for (double tau : {1.0, 0.5}) {
          const torch::Tensor packed =
              torch::randn({length, 3, heads, d}).to(dtype).to(torch::kFloat32);
          auto head_view = [&](const torch::Tensor& t, int64_t i) {
            return t.select(1, i).transpose(0, 1);
          };
          const torch::Tensor positions = torch::arange(length, torch::kFloat32);
          const torch::Tensor outside =
              (positions.unsqueeze(1) - positions.unsqueeze(0)).abs().gt(band);
          const torch::Tensor logits =
              torch::matmul(head_view(packed, 0), head_view(packed, 1).transpose(-1, -2)) /
              std::sqrt(double(d));
          const torch::Tensor expected =
              torch::matmul(torch::softmax(logits.masked_fill(outside, -INFINITY) / tau, -1),
                            head_view(packed, 2));
          const torch::Tensor real = packed.to(dtype);
          torch::Tensor context = torch::full({length, heads * d}, NAN, real.options());
          torch::Tensor out = context.view({length, heads, d}).transpose(0, 1);
          Attend(head_view(real, 0), head_view(real, 1), head_view(real, 2),
                 1.0 / (std::sqrt(double(d)) * tau), std::min(block, length),
                 AttentionPattern{{}, band}, out);
          const torch::Tensor actual = context.view({length, heads, d}).transpose(0, 1);
          EXPECT_LT((actual.to(torch::kFloat32) - expected).abs().max().item<float>(), tolerance)
              << dtype << " length " << length << " block " << block << " tau " << tau;
        }
      }
    }
  }
  // The edge itself: values zero but at key `band` (inside) and `band + 1` (outside) from
  // query 0, all logits equal: query 0's context is the inside value over band + 1 keys.
  const int64_t length = 40;
  torch::Tensor q = torch::zeros({1, length, d}), k = torch::zeros({1, length, d});
  torch::Tensor v = torch::zeros({1, length, d});
  v[0][band][0] = 1.0f;
  v[0][band + 1][1] = 1.0f;
  torch::Tensor out = torch::empty({1, length, d});
  Attend(q, k, v, 1.0, 16, AttentionPattern{{}, band}, out);
  EXPECT_FLOAT_EQ(out[0][0][0].item<float>(), 1.0f / (band + 1));
  EXPECT_EQ(out[0][0][1].item<float>(), 0.0f);
}

// A decoder's attention: query i sees keys j <= i only, with 6 query heads on 2 key/value heads
// (head h reads key/value head h / 3), with and without a band, in both dtypes and on both
// paths (bf16 batches under 512 keys), against the formula with every key/value head repeated
// for its group and a full causal mask.
TEST(BlockedSelfAttention, CausalGroupedHeadsAttendTheirGroupsPastOnly) {
  torch::manual_seed(13);
  const int64_t kv_heads = 2, group = 3, d = 16;
  for (auto [dtype_case, tolerance] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 2e-1}}) {
    const auto dtype = dtype_case;
    for (int64_t length : {1, 7, 130, 600}) {
      for (int64_t band : {0, 5}) {
        for (double tau : {1.0, 0.5}) {
          const torch::Tensor q =
              torch::randn({kv_heads, group, length, d}).to(dtype).to(torch::kFloat32);
          const torch::Tensor k = torch::randn({kv_heads, length, d}).to(dtype).to(torch::kFloat32);
          const torch::Tensor v = torch::randn({kv_heads, length, d}).to(dtype).to(torch::kFloat32);
          const torch::Tensor positions = torch::arange(length, torch::kFloat32);
          const torch::Tensor offsets = positions.unsqueeze(0) - positions.unsqueeze(1);  // j - i
          torch::Tensor hidden = offsets.gt(0);
          if (band > 0) hidden = hidden.logical_or(offsets.abs().gt(band));
          const torch::Tensor logits =
              torch::matmul(q, k.unsqueeze(1).transpose(-1, -2)) / std::sqrt(double(d));
          const torch::Tensor expected = torch::matmul(
              torch::softmax(logits.masked_fill(hidden, -INFINITY) / tau, -1), v.unsqueeze(1));
          torch::Tensor out = torch::full({kv_heads, group, length, d}, NAN, dtype);
          AttentionPattern pattern;
          pattern.band = band;
          pattern.causal = true;
          BlockedSelfAttention(q.to(dtype), k.to(dtype), v.to(dtype),
                               1.0 / (std::sqrt(double(d)) * tau), std::min<int64_t>(64, length),
                               pattern, out);
          EXPECT_LT((out.to(torch::kFloat32) - expected).abs().max().item<float>(), tolerance)
              << dtype << " length " << length << " band " << band << " tau " << tau;
        }
      }
    }
  }
  // The causal edge: query i's context is the mean of values 0..i when all logits are equal.
  const int64_t length = 70;
  const torch::Tensor zeros = torch::zeros({1, 1, length, d});
  const torch::Tensor v = torch::arange(length, torch::kFloat32)
                              .view({1, length, 1})
                              .expand({1, length, d})
                              .contiguous();
  torch::Tensor out = torch::empty({1, 1, length, d});
  AttentionPattern causal;
  causal.causal = true;
  BlockedSelfAttention(zeros, zeros[0], v, 1.0, 16, causal, out);
  for (int64_t i : {0, 1, 15, 16, 69}) {
    EXPECT_FLOAT_EQ(out[0][0][i][0].item<float>(), static_cast<float>(i) / 2) << "query " << i;
  }
}

// Every key, grouped query heads, fp32: below kHeadBatchedBelowKeys all heads go through one
// call per product, from it on one head at a time; both exact, on the bound's either side, with
// heads read from a packed projection's strides and written into a [L, heads x d] context.
TEST(BlockedSelfAttention, GroupedHeadsWithEveryKeyOnEitherSideOfTheHeadBatchedBound) {
  torch::manual_seed(17);
  const int64_t kv_heads = 2, group = 2, d = 16;
  for (int64_t length : {int64_t{1}, int64_t{31}, kHeadBatchedBelowKeys - 1, kHeadBatchedBelowKeys,
                         int64_t{300}}) {
    for (double tau : {1.0, 0.4}) {
      // [L, kv, group + 2, d]: each group's queries, then its key and value.
      const torch::Tensor packed = torch::randn({length, kv_heads, group + 2, d});
      const torch::Tensor seq = packed.permute({2, 1, 0, 3});  // [group + 2, kv, L, d]
      const torch::Tensor q = seq.slice(0, 0, group).transpose(0, 1), k = seq[group],
                          v = seq[group + 1];
      const torch::Tensor logits = torch::matmul(q.contiguous(),
                                                 k.contiguous().unsqueeze(1).transpose(-1, -2)) /
                                   std::sqrt(double(d));
      const torch::Tensor expected =
          torch::matmul(torch::softmax(logits / tau, -1), v.contiguous().unsqueeze(1));
      torch::Tensor context = torch::full({length, kv_heads * group * d}, NAN);
      torch::Tensor out = context.view({length, kv_heads, group, d}).permute({1, 2, 0, 3});
      BlockedSelfAttention(q, k, v, 1.0 / (std::sqrt(double(d)) * tau), 512, {}, out);
      EXPECT_LT((out - expected).abs().max().item<float>(), 1e-5)
          << "length " << length << " tau " << tau;
    }
  }
}

// One key far longer than the rest, along a direction no query has: a Cauchy-Schwarz bound on
// every row's largest logit (|q| times the longest key) sits hundreds above the logits
// themselves, which stay small enough for fp32 to compute exactly.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> ExtremeHead(int64_t length, int64_t d) {
  torch::manual_seed(11);
  torch::Tensor q = torch::randn({length, d});
  q.select(1, 0).zero_();
  torch::Tensor k = torch::randn({length, d});
  k[0].zero_();
  k[0][0] = 1000;
  return {q, k, torch::randn({length, d})};
}

// FusedAttention on its own: each block exact against the plain formula, written only into its
// own rows; and a block it cannot hold in fp32 reported, with nothing written.
TEST(FusedAttention, WritesEachBlockExactlyAndRefusesRowsOutOfRange) {
  torch::manual_seed(5);
  const int64_t length = 150, d = 16, block = 64;
  const torch::Tensor q = torch::randn({length, d}), k = torch::randn({length, d}),
                      v = torch::randn({length, d});
  const torch::Tensor all_keys = torch::ones({1, 1, length}, torch::kBool);
  for (double tau : {1.0, 0.3}) {
    const double scale = 1.0 / (std::sqrt(double(d)) * tau);
    const torch::Tensor expected = PlainAttention(q, k, v, all_keys.view({1, length}), tau);
    FusedAttention fused(length, d, block, /*causal=*/false, /*first_query=*/0);
    fused.SetHead(k, v);
    torch::Tensor out = torch::full({length, d}, NAN);
    ASSERT_TRUE(fused.Block(q, 64, 128, scale, out));
    EXPECT_LT((out.slice(0, 64, 128) - expected.slice(0, 64, 128)).abs().max().item<float>(), 1e-5)
        << "tau " << tau;
    EXPECT_TRUE(torch::isnan(out.slice(0, 0, 64)).all().item<bool>());
    EXPECT_TRUE(torch::isnan(out.slice(0, 128)).all().item<bool>());
  }
  const auto [eq, ek, ev] = ExtremeHead(length, d);
  FusedAttention fused(length, d, block, /*causal=*/false, /*first_query=*/0);
  fused.SetHead(ek, ev);
  torch::Tensor out = torch::full({length, d}, NAN);
  EXPECT_FALSE(fused.Block(eq, 0, 64, 1.0 / std::sqrt(double(d)), out));
  EXPECT_TRUE(torch::isnan(out).all().item<bool>());
}

// Causal: a block reads the keys up to its end rounded to the shape step and zeroes what lies
// past each row, padding keys included; a last block ending off the step (100..150) too.
TEST(FusedAttention, CausalBlocksSeeTheirPastOnly) {
  torch::manual_seed(6);
  const int64_t length = 150, d = 16, block = 64;
  const torch::Tensor q = torch::randn({length, d}), k = torch::randn({length, d}),
                      v = torch::randn({length, d});
  const torch::Tensor positions = torch::arange(length);
  const torch::Tensor past = positions.unsqueeze(0).le(positions.unsqueeze(1));  // j <= i
  for (double tau : {1.0, 0.3}) {
    const torch::Tensor expected = PlainAttention(q, k, v, past, tau);
    FusedAttention fused(length, d, block, /*causal=*/true, /*first_query=*/0);
    fused.SetHead(k, v);
    torch::Tensor out = torch::full({length, d}, NAN);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 64}, {64, 100}, {100, 150}}) {
      ASSERT_TRUE(fused.Block(q, begin, end, 1.0 / (std::sqrt(double(d)) * tau), out));
    }
    EXPECT_LT((out - expected).abs().max().item<float>(), 1e-5) << "tau " << tau;
  }
}

// Where FusedAttention refuses a block, the plain path computes it: still exact.
TEST(BlockedSelfAttention, StaysExactWhereWeightsLeaveFp32sRange) {
  const int64_t length = kFusedAttentionFromKeys + 5, d = 16;
  const auto [q, k, v] = ExtremeHead(length, d);
  const torch::Tensor rows = torch::tensor({0L, 1L, 63L, 64L, 2050L, length - 1});
  for (double tau : {1.0, 0.5}) {
    const torch::Tensor expected =
        PlainAttention(q.index_select(0, rows), k, v, torch::ones({1, length}, torch::kBool), tau);
    torch::Tensor out = torch::full({1, length, d}, NAN);
    Attend(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), 1.0 / (std::sqrt(double(d)) * tau), 64,
           {}, out);
    EXPECT_LT((out[0].index_select(0, rows) - expected).abs().max().item<float>(), 1e-5)
        << "tau " << tau;
  }
}

// The same from kFusedAttentionFromKeys keys on, where fp32 takes FusedAttention: a length that
// is no multiple of its shape step, a last block of 5 queries, and every temperature. Checked
// on query rows at the ends of blocks (the plain formula over all 4,101 rows takes seconds).
TEST(BlockedSelfAttention, EqualsThePlainFormulaWhereTheSoftmaxIsFolded) {
  torch::manual_seed(7);
  const int64_t heads = 2, d = 16, length = kFusedAttentionFromKeys + 5;
  const torch::Tensor packed = torch::randn({length, 3, heads, d});
  auto head_view = [&](int64_t i) { return packed.select(1, i).transpose(0, 1); };
  const torch::Tensor rows =
      torch::tensor({0L, 1L, 99L, 100L, 511L, 512L, 2050L, length - 6, length - 5, length - 1});
  for (double tau : {1.0, 0.7, 0.2, 2.5}) {
    const torch::Tensor expected =
        PlainAttention(head_view(0).index_select(1, rows), head_view(1).contiguous(),
                       head_view(2).contiguous(), torch::ones({1, 1, length}, torch::kBool), tau);
    for (int64_t block : {512, 100}) {
      torch::Tensor context = torch::full({length, heads * d}, NAN);
      torch::Tensor out = context.view({length, heads, d}).transpose(0, 1);
      Attend(head_view(0), head_view(1), head_view(2), 1.0 / (std::sqrt(double(d)) * tau), block,
             {}, out);
      EXPECT_LT((out.index_select(1, rows) - expected).abs().max().item<float>(), 1e-5)
          << "block " << block << " tau " << tau;
    }
  }
}

// A causal decoder from kFusedAttentionFromKeys keys on takes the fused path too: grouped heads,
// every block reading only its past, against the masked formula on rows at the block edges.
TEST(BlockedSelfAttention, CausalGroupedHeadsStayExactWhereTheSoftmaxIsFolded) {
  torch::manual_seed(8);
  const int64_t kv_heads = 2, group = 2, d = 16, length = kFusedAttentionFromKeys + 5;
  const torch::Tensor q = torch::randn({kv_heads, group, length, d});
  const torch::Tensor k = torch::randn({kv_heads, length, d}),
                      v = torch::randn({kv_heads, length, d});
  const torch::Tensor rows =
      torch::tensor({0L, 1L, 511L, 512L, 513L, 2050L, length - 6, length - 5, length - 1});
  const torch::Tensor past = torch::arange(length).unsqueeze(0).le(rows.unsqueeze(1));
  const size_t built = FusedAttention::primitives();
  for (double tau : {1.0, 0.5}) {
    const torch::Tensor expected =
        PlainAttention(q.index_select(2, rows), k.unsqueeze(1), v.unsqueeze(1), past, tau);
    torch::Tensor out = torch::full({kv_heads, group, length, d}, NAN);
    AttentionPattern pattern;
    pattern.causal = true;
    BlockedSelfAttention(q, k, v, 1.0 / (std::sqrt(double(d)) * tau), 512, pattern, out);
    EXPECT_LT((out.index_select(2, rows) - expected).abs().max().item<float>(), 1e-5)
        << "tau " << tau;
  }
  // Its own kernels, one per block's key count (the fused path ran, not the plain fallback).
  EXPECT_GE(FusedAttention::primitives(), built + length / 512);
}

// A continuation (a causal model's document after its query's cached prefix): only the last
// queries, against every key, equal those rows of the whole sequence's attention, on each path:
// fp32 plain and folded, bf16 batched (under 512 keys) and head by head, and under a band,
// ALiBi and a relative bias, where positions count from the prefix's start.
TEST(BlockedSelfAttention, AContinuationsQueriesEqualThoseRowsOfTheWholeSequence) {
  torch::manual_seed(12);
  const int64_t kv_heads = 2, group = 2, d = 16;
  const auto relative = [] {
    AttentionPattern p;
    p.causal = true;
    p.relative_bias = torch::randn({4, 32});
    return p;
  };
  const auto banded = [] {
    AttentionPattern p;
    p.causal = true;
    p.band = 40;
    return p;
  };
  const auto alibi = [] {
    AttentionPattern p;
    p.causal = true;
    p.alibi = {0.5, 0.25, 0.125, 0.0625};
    return p;
  };
  const auto causal = [] {
    AttentionPattern p;
    p.causal = true;
    return p;
  };
  for (auto [dtype_case, tolerance] :
       {std::pair{torch::kFloat32, 1e-5}, std::pair{torch::kBFloat16, 3e-2}}) {
    const auto dtype = dtype_case;
    for (const int64_t length : {300L, 700L, kFusedAttentionFromKeys + 70}) {
      if (dtype == torch::kBFloat16 && length > 1000) continue;  // bf16 never folds
      for (const AttentionPattern& pattern : {causal(), banded(), alibi(), relative()}) {
        const torch::Tensor q = torch::randn({kv_heads, group, length, d}).to(dtype);
        const torch::Tensor k = torch::randn({kv_heads, length, d}).to(dtype);
        const torch::Tensor v = torch::randn({kv_heads, length, d}).to(dtype);
        torch::Tensor whole = torch::full({kv_heads, group, length, d}, NAN, q.options());
        BlockedSelfAttention(q, k, v, 0.3, 128, pattern, whole);
        for (const int64_t prefix : {1L, 77L, length - 1}) {
          const torch::Tensor rest = q.slice(2, prefix).contiguous();
          torch::Tensor out = torch::full_like(rest, NAN);
          BlockedSelfAttention(rest, k, v, 0.3, 128, pattern, out);
          EXPECT_LT((out - whole.slice(2, prefix)).abs().max().item<float>(), tolerance)
              << dtype << " length " << length << " prefix " << prefix << " band " << pattern.band
              << " alibi " << pattern.alibi.size() << " bias " << pattern.relative_bias.defined();
        }
      }
    }
  }
}

// Lengths within one shape step share their kernels, so a model builds a bounded number.
TEST(BlockedSelfAttention, LengthsWithinAShapeStepShareTheFoldedKernels) {
  const int64_t d = 16;
  auto run = [&](int64_t length) {
    const torch::Tensor x = torch::randn({1, length, d});
    torch::Tensor out = torch::empty_like(x);
    Attend(x, x, x, 0.25, 512, {}, out);
  };
  run(kFusedAttentionFromKeys + 4);
  const size_t built = FusedAttention::primitives();
  EXPECT_GT(built, 0u);
  run(kFusedAttentionFromKeys + 24);  // the same padded length and padded last block
  EXPECT_EQ(FusedAttention::primitives(), built);
  run(kFusedAttentionFromKeys + 100);  // the next step
  EXPECT_GT(FusedAttention::primitives(), built);
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Full scores for 4 heads x 8,192 x 8,192 would take 1 GiB; blocks of 128 queries take 16 MiB.
TEST(BlockedSelfAttention, ScoresAtEightThousandTokensStayWithinABlock) {
  c10::InferenceMode guard;
  const int64_t heads = 4, length = 8192, d = 32;
  torch::Tensor q = torch::randn({heads, length, d});
  torch::Tensor k = torch::randn({heads, length, d});
  torch::Tensor v = torch::randn({heads, length, d});
  const long before = PeakRssKb();
  torch::Tensor out = torch::empty_like(q);
  Attend(q, k, v, 1.0 / std::sqrt(double(d)), 128, {}, out);
  const long grown_mib = (PeakRssKb() - before) / 1024;
  EXPECT_EQ(out.sizes(), q.sizes());
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  EXPECT_LT(grown_mib, 256) << "peak RSS grew by " << grown_mib << " MiB";
}

// LibTorch's own ops (the path a GPU runs) against the CPU kernels, on every pattern the
// encoder passes: every key, causal (whole and a continuation after cached prefix keys), a band
// with and without causality, ALiBi and a relative bias; grouped heads read from a packed
// projection and written into a context, as the encoder lays them out.
TEST(TorchOpsSelfAttention, EqualsTheCpuKernelsOnEveryPattern) {
  torch::manual_seed(17);
  const int64_t kv_heads = 2, group = 3, d = 16, heads = kv_heads * group;
  std::vector<std::pair<std::string, AttentionPattern>> patterns(7);
  patterns[0].first = "every key";
  patterns[1] = {"causal", {}};
  patterns[1].second.causal = true;
  patterns[2] = {"band", {}};
  patterns[2].second.band = 6;
  patterns[3] = {"causal band", patterns[2].second};
  patterns[3].second.causal = true;
  patterns[4] = {"alibi", {}};
  for (int64_t h = 0; h < heads; ++h) patterns[4].second.alibi.push_back(0.5 / (h + 1));
  patterns[5] = {"relative bias", {}};
  patterns[5].second.relative_bias = torch::randn({heads, 32});
  patterns[5].second.relative_max_distance = 64;
  patterns[6] = {"alibi, causal", patterns[4].second};
  patterns[6].second.causal = true;
  for (const auto& named : patterns) {
    const std::string& name = named.first;
    const AttentionPattern& pattern = named.second;  // a plain reference: lambdas capture it
    for (int64_t length : {1, 9, 130, 700}) {
      for (int64_t queries : {length, (length + 1) / 2}) {  // whole, and a continuation
        for (double tau : {1.0, 0.6}) {
          const torch::Tensor projection = torch::randn({length, kv_heads, group + 2, d});
          const torch::Tensor seq = projection.permute({2, 1, 0, 3});  // [group + 2, kv, L, d]
          const torch::Tensor q = seq.slice(0, 0, group).transpose(0, 1).slice(2, length - queries);
          const torch::Tensor k = seq[group], v = seq[group + 1];
          const double scale = 1.0 / (std::sqrt(double(d)) * tau);
          auto run = [&](auto attend) {
            torch::Tensor context = torch::full({queries, heads * d}, NAN);
            torch::Tensor out = context.view({queries, kv_heads, group, d}).permute({1, 2, 0, 3});
            attend(q, k, v, scale, std::min<int64_t>(64, queries), pattern, out);
            return context;
          };
          const torch::Tensor expected = run(BlockedSelfAttention);
          const torch::Tensor actual = run(TorchOpsSelfAttention);
          // fp32 sums over up to 700 keys in two orders (oneDNN's blocks, LibTorch's BLAS):
          // 2.3e-6 at 700 keys on an AMD EPYC (avx512), under 2e-6 on a Xeon.
          EXPECT_LT((actual - expected).abs().max().item<float>(), 4e-6)
              << name << " length " << length << " queries " << queries << " tau " << tau;
        }
      }
    }
  }
}

}  // namespace
}  // namespace embedding::model_store
