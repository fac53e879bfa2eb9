// The rows a batch is computed on (BucketedRows): never fewer than its tokens, never more idle
// rows than the bucket allows, and few distinct shapes.
#include <gtest/gtest.h>

#include <set>

#include "model_store/encoder/encoder_layers.h"

namespace embedding::model_store {
namespace {

TEST(RowBuckets, IdleRowsAreAtMost15UpTo256TokensAndUnderAnEighthAbove) {
  int64_t previous = 0;
  for (int64_t tokens = 1; tokens <= 20000; ++tokens) {
    const int64_t rows = BucketedRows(tokens);
    ASSERT_GE(rows, tokens);
    ASSERT_GE(rows, previous) << tokens;  // windows of a batch fit in the batch's rows
    previous = rows;
    const int64_t idle = rows - tokens;
    if (tokens <= 256) {
      ASSERT_LT(idle, 16) << tokens;
    } else {
      ASSERT_LT(idle, 512) << tokens;
      ASSERT_LT(idle * 8, tokens) << tokens;  // a sixteenth of the next power of two
    }
    ASSERT_EQ(BucketedRows(rows), rows) << tokens;  // a bucket's rows are their own bucket
  }
}

TEST(RowBuckets, FortyShapesUpTo2048TokensAndEightPerDoublingToTheCoarsestBucket) {
  const auto shapes = [](int64_t from, int64_t to) {
    std::set<int64_t> rows;
    for (int64_t tokens = from; tokens <= to; ++tokens) rows.insert(BucketedRows(tokens));
    return rows.size();
  };
  EXPECT_EQ(shapes(1, 2048), 40u);
  EXPECT_EQ(shapes(2049, 4096), 8u);
  EXPECT_EQ(shapes(4097, 8192), 8u);
  EXPECT_EQ(BucketedRows(160), 160);
  EXPECT_EQ(BucketedRows(257), 288);
  EXPECT_EQ(BucketedRows(8193), 8704);  // 512 rows at most from there on
}

}  // namespace
}  // namespace embedding::model_store
