// Small vector operations for merging chunk vectors into document vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "server/core/strategy.h"

namespace embedding::server {

// Scales `v` to unit L2 norm; a zero vector stays zero.
void L2Normalize(std::vector<float>* v);

// The document vector from its chunk vectors by `rule`: mean, mean weighted by `weights`, or
// element-wise max. Not normalised.
std::vector<float> MergeChunkVectors(MergeRule rule, const std::vector<std::vector<float>>& chunks,
                                     const std::vector<uint32_t>& weights);

// The first `dimensions` entries (all when 0 or larger), re-normalised when `normalize`.
std::vector<float> TruncateDimensions(const std::vector<float>& v, uint32_t dimensions,
                                      bool normalize);

}  // namespace embedding::server
