#include "model_store/demo/retrieval/symmetric_eigen.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <thread>

namespace embedding::model_store {
namespace {

using Dense = std::vector<double>;  // rows x cols, row-major

// Runs fn(block) for blocks [0, kBlocks) on a few threads. The partition is fixed, so results
// that are summed per block come out the same whatever the machine's core count.
constexpr int kBlocks = 16;
void ForEachBlock(const std::function<void(int)>& fn) {
  const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int b = t; b < kBlocks; b += threads) fn(b);
    });
  }
  for (auto& thread : pool) thread.join();
}

int64_t BlockBegin(int64_t n, int block) { return n * block / kBlocks; }

// splitmix64: a tiny generator whose output is specified, unlike std::normal_distribution's.
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : state_(seed) {}
  double Next() {
    const double u1 = (static_cast<double>(Bits() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(Bits() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t Bits() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

Dense Multiply(const SparseSymmetric& a, const Dense& y, int cols) {
  Dense out(static_cast<size_t>(a.n) * cols, 0.0);
  ForEachBlock([&](int block) {
    for (int64_t r = BlockBegin(a.n, block); r < BlockBegin(a.n, block + 1); ++r) {
      double* dst = &out[r * cols];
      for (int64_t e = a.row_start[r]; e < a.row_start[r + 1]; ++e) {
        const double v = a.value[e];
        const double* src = &y[static_cast<int64_t>(a.column[e]) * cols];
        for (int c = 0; c < cols; ++c) dst[c] += v * src[c];
      }
    }
  });
  return out;
}

// Gram matrix YᵀY (upper triangle filled, then mirrored), summed block by block in order.
Dense Gram(const Dense& y, int64_t rows, int cols) {
  std::vector<Dense> partial(kBlocks, Dense(static_cast<size_t>(cols) * cols, 0.0));
  ForEachBlock([&](int block) {
    Dense& g = partial[block];
    for (int64_t r = BlockBegin(rows, block); r < BlockBegin(rows, block + 1); ++r) {
      const double* row = &y[r * cols];
      for (int i = 0; i < cols; ++i) {
        const double yi = row[i];
        double* gi = &g[static_cast<size_t>(i) * cols];
        for (int j = i; j < cols; ++j) gi[j] += yi * row[j];
      }
    }
  });
  Dense g(static_cast<size_t>(cols) * cols, 0.0);
  for (const Dense& p : partial)
    for (size_t i = 0; i < g.size(); ++i) g[i] += p[i];
  for (int i = 0; i < cols; ++i)
    for (int j = 0; j < i; ++j) g[i * cols + j] = g[j * cols + i];
  return g;
}

// Y <- Y R⁻¹ with RᵀR = YᵀY (Cholesky QR); twice, since one pass loses orthogonality when Y is
// ill-conditioned. A tiny diagonal shift keeps a rank-deficient Gram matrix factorable.
void Orthonormalize(Dense* y, int64_t rows, int cols) {
  for (int pass = 0; pass < 2; ++pass) {
    Dense r = Gram(*y, rows, cols);
    double trace = 0;
    for (int i = 0; i < cols; ++i) trace += r[i * cols + i];
    for (int i = 0; i < cols; ++i) r[i * cols + i] += 1e-12 * trace / cols;
    for (int j = 0; j < cols; ++j) {  // upper Cholesky factor in place
      double d = r[j * cols + j];
      for (int k = 0; k < j; ++k) d -= r[k * cols + j] * r[k * cols + j];
      d = std::sqrt(std::max(d, 1e-300));
      r[j * cols + j] = d;
      for (int i = j + 1; i < cols; ++i) {
        double s = r[j * cols + i];
        for (int k = 0; k < j; ++k) s -= r[k * cols + j] * r[k * cols + i];
        r[j * cols + i] = s / d;
      }
    }
    ForEachBlock([&](int block) {
      for (int64_t row = BlockBegin(rows, block); row < BlockBegin(rows, block + 1); ++row) {
        double* x = &(*y)[row * cols];
        for (int j = 0; j < cols; ++j) {
          double s = x[j];
          for (int k = 0; k < j; ++k) s -= x[k] * r[k * cols + j];
          x[j] = s / r[j * cols + j];
        }
      }
    });
  }
}

// Cyclic Jacobi rotations on a small symmetric matrix: eigenvalues on the diagonal of `t`,
// eigenvectors in the columns of the returned matrix.
Dense JacobiEigen(Dense* t, int n) {
  Dense v(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) v[i * n + i] = 1.0;
  Dense& a = *t;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0, diag = 0;
    for (int i = 0; i < n; ++i) {
      diag += a[i * n + i] * a[i * n + i];
      for (int j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
    }
    if (off <= 1e-22 * diag) break;
    for (int p = 0; p < n; ++p) {
      for (int q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (std::abs(apq) < 1e-300) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double tan =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(tan * tan + 1), s = tan * c;
        for (int k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) {
          const double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  return v;
}

}  // namespace

EigenPairs LeadingEigenPairs(const SparseSymmetric& a, int k, int oversampling,
                             int power_iterations, uint64_t seed) {
  const int l = k + oversampling;
  Dense q(static_cast<size_t>(a.n) * l);
  Gaussian gaussian(seed);
  for (double& x : q) x = gaussian.Next();
  q = Multiply(a, q, l);
  Orthonormalize(&q, a.n, l);
  for (int i = 0; i < power_iterations; ++i) {
    q = Multiply(a, q, l);
    Orthonormalize(&q, a.n, l);
  }
  // T = Qᵀ A Q: the problem projected on the subspace.
  const Dense aq = Multiply(a, q, l);
  Dense t(static_cast<size_t>(l) * l, 0.0);
  for (int64_t r = 0; r < a.n; ++r)
    for (int i = 0; i < l; ++i) {
      const double qi = q[r * l + i];
      for (int j = 0; j < l; ++j) t[i * l + j] += qi * aq[r * l + j];
    }
  for (int i = 0; i < l; ++i)  // symmetrise rounding
    for (int j = i + 1; j < l; ++j)
      t[i * l + j] = t[j * l + i] = 0.5 * (t[i * l + j] + t[j * l + i]);
  const Dense w = JacobiEigen(&t, l);
  std::vector<int> order(l);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return t[x * l + x] > t[y * l + y]; });
  EigenPairs out;
  out.vectors.assign(static_cast<size_t>(a.n) * k, 0.0);
  for (int c = 0; c < k; ++c) out.values.push_back(t[order[c] * l + order[c]]);
  ForEachBlock([&](int block) {
    for (int64_t r = BlockBegin(a.n, block); r < BlockBegin(a.n, block + 1); ++r)
      for (int c = 0; c < k; ++c) {
        double s = 0;
        for (int i = 0; i < l; ++i) s += q[r * l + i] * w[i * l + order[c]];
        out.vectors[r * k + c] = s;
      }
  });
  return out;
}

}  // namespace embedding::model_store
