// Token pooling for multi-vector documents (PyLate's ColBERT.pool_embeddings_hierarchical,
// Answer.AI's "token pooling"): fewer vectors to store per document, at almost no loss to
// MaxSim, by clustering a document's token vectors and keeping each cluster's mean.
#pragma once

#include <cstddef>
#include <cstdint>

#include "server/core/embed_result.h"

namespace embedding::server {

// The rows after the first `protected_rows` are clustered by Ward linkage on cosine distance
// (1 - a . b; the rows are unit vectors) into max(n / pool_factor, 1) flat clusters, as scipy's
// linkage(method="ward") and fcluster(criterion="maxclust") form them, ties included; each
// cluster becomes its members' mean (not re-normalised, as PyLate leaves it), its span from
// its first member's start to its last member's end. Protected rows stay first, then the
// clusters by first member. A document longer than kPoolGroupRows is pooled group by group of
// that many rows (its distance matrix bounded). pool_factor <= 1 returns `in` unchanged.
inline constexpr size_t kPoolGroupRows = 1024;
MultiVectorResult PoolTokens(MultiVectorResult in, uint32_t pool_factor, size_t protected_rows);

}  // namespace embedding::server
