#include "server/core/token_pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace embedding::server {
namespace {

struct Merge {
  size_t x = 0, y = 0;  // y keeps the merged cluster, as scipy's nn_chain leaves it
  double height = 0;
};

// scipy's Ward update (_hierarchy_distance_update.pxi): the distance from cluster i to the
// union of x and y.
double WardDistance(double d_xi, double d_yi, double d_xy, double nx, double ny, double ni) {
  const double t = 1.0 / (nx + ny + ni);
  return std::sqrt((ni + nx) * t * d_xi * d_xi + (ni + ny) * t * d_yi * d_yi -
                   ni * t * d_xy * d_xy);
}

// Ward's merges of `rows` (indices into `in`) by scipy's nearest-neighbour chain (nn_chain),
// in the order it finds them: the same scans, tie rules and indices, so the same tree.
std::vector<Merge> WardMerges(const MultiVectorResult& in, const std::vector<size_t>& rows) {
  const size_t n = rows.size(), dim = in.dim;
  std::vector<double> distance(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const float* a = in.values.data() + rows[i] * dim;
      const float* b = in.values.data() + rows[j] * dim;
      double dot = 0;
      for (size_t k = 0; k < dim; ++k) dot += static_cast<double>(a[k]) * b[k];
      distance[i * n + j] = distance[j * n + i] = 1.0 - dot;
    }
  }
  std::vector<double> size(n, 1.0);
  std::vector<size_t> chain;
  std::vector<Merge> merges;
  for (size_t k = 0; k + 1 < n; ++k) {
    if (chain.empty()) {
      for (size_t i = 0; i < n; ++i) {
        if (size[i] > 0) {
          chain.push_back(i);
          break;
        }
      }
    }
    size_t x = 0, y = 0;
    double best = 0;
    while (true) {
      x = chain.back();
      best = std::numeric_limits<double>::infinity();
      if (chain.size() > 1) {
        y = chain[chain.size() - 2];
        best = distance[x * n + y];
      }
      for (size_t i = 0; i < n; ++i) {
        if (size[i] == 0 || i == x) continue;
        if (distance[x * n + i] < best) {
          best = distance[x * n + i];
          y = i;
        }
      }
      if (chain.size() > 1 && y == chain[chain.size() - 2]) break;
      chain.push_back(y);
    }
    chain.resize(chain.size() - 2);
    if (x > y) std::swap(x, y);
    const double nx = size[x], ny = size[y];
    merges.push_back({x, y, best});
    size[x] = 0;
    size[y] = nx + ny;
    for (size_t i = 0; i < n; ++i) {
      if (size[i] == 0 || i == y) continue;
      const double updated =
          WardDistance(distance[i * n + x], distance[i * n + y], best, nx, ny, size[i]);
      distance[i * n + y] = distance[y * n + i] = updated;
    }
  }
  return merges;
}

size_t Find(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

// fcluster(criterion="maxclust"): the least height r at which at most `clusters` remain, every
// merge at or below r applied. Appends each cluster's mean, by first member, to `out`.
void AppendClusters(const MultiVectorResult& in, const std::vector<size_t>& rows, size_t clusters,
                    MultiVectorResult* out) {
  const size_t n = rows.size(), dim = in.dim;
  std::vector<Merge> merges = WardMerges(in, rows);
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.height < b.height; });
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  if (clusters < n) {
    const double cut = merges[n - clusters - 1].height;
    for (const Merge& merge : merges) {
      if (merge.height > cut) break;
      parent[Find(parent, merge.x)] = Find(parent, merge.y);
    }
  }
  std::vector<size_t> order;  // cluster roots by first member
  std::vector<std::vector<size_t>> members(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t root = Find(parent, i);
    if (members[root].empty()) order.push_back(root);
    members[root].push_back(i);
  }
  for (size_t root : order) {
    std::vector<double> sum(dim, 0.0);
    for (size_t i : members[root]) {
      const float* v = in.values.data() + rows[i] * dim;
      for (size_t k = 0; k < dim; ++k) sum[k] += v[k];
    }
    const double count = static_cast<double>(members[root].size());
    for (double v : sum) out->values.push_back(static_cast<float>(v / count));
    out->token_spans.push_back({in.token_spans[rows[members[root].front()]].begin,
                                in.token_spans[rows[members[root].back()]].end});
  }
}

}  // namespace

MultiVectorResult PoolTokens(MultiVectorResult in, uint32_t pool_factor, size_t protected_rows) {
  const size_t n = in.count();
  if (pool_factor <= 1 || n <= protected_rows + 1) return in;
  MultiVectorResult out;
  out.dim = in.dim;
  const size_t dim = in.dim;
  out.values.assign(in.values.begin(), in.values.begin() + protected_rows * dim);
  out.token_spans.assign(in.token_spans.begin(), in.token_spans.begin() + protected_rows);
  for (size_t begin = protected_rows; begin < n; begin += kPoolGroupRows) {
    std::vector<size_t> rows(std::min(kPoolGroupRows, n - begin));
    std::iota(rows.begin(), rows.end(), begin);
    const size_t clusters = std::max<size_t>(rows.size() / pool_factor, 1);
    if (clusters >= rows.size()) {  // nothing to pool, as PyLate skips it
      for (size_t r : rows) {
        out.values.insert(out.values.end(), in.values.begin() + r * dim,
                          in.values.begin() + (r + 1) * dim);
        out.token_spans.push_back(in.token_spans[r]);
      }
      continue;
    }
    AppendClusters(in, rows, clusters, &out);
  }
  return out;
}

}  // namespace embedding::server
