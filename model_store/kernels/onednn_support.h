// Internal to model_store: what every direct oneDNN kernel here shares (the fp32 and int8
// linear layers, fp32 attention): one CPU engine, primitives built once per row count, and
// tensors seen as oneDNN memory without copying. Included only by model_store's .cc files.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <utility>

namespace embedding::model_store {

// The process's CPU engine (LibTorch links the same libdnnl, which keeps one thread pool).
const dnnl::engine& CpuEngine();

// `tensor`'s storage as oneDNN memory of description `desc` (no copy; the tensor must outlive
// the memory object and match the description).
dnnl::memory AsMemory(const dnnl::memory::desc& desc, const torch::Tensor& tensor);

// A [rows, cols] fp32 view with unit column stride as a oneDNN description, its row stride
// kept: head slices of a packed [rows, 3 x hidden] projection are read in place.
dnnl::memory::desc MatrixDesc(const torch::Tensor& matrix);

// A user-managed scratchpad for `pd`, sized by the primitive itself (a thread-safe
// alternative to the library-owned one, which a primitive shares among its callers).
torch::Tensor Scratchpad(const dnnl::primitive_desc_base& pd);

// A matmul's weights as the kernel reads them: a blocked layout of oneDNN's choosing, or the
// plain one.
struct MatmulWeights {
  dnnl::memory::desc desc;
  torch::Tensor data;   // the bytes `desc` describes, from data.data_ptr()
  bool packed = false;  // `desc` is the kernel's blocked layout, not the plain one
};

// Describes the matmul for `rows` rows with weights laid out as `weights`.
using DescribeMatmul =
    std::function<dnnl::matmul::primitive_desc(int64_t rows, const dnnl::memory::desc& weights)>;

// `plain_data` (described by `plain`) reordered once into the layout the kernel asks for. That
// layout is kept only if one row and a full 8,192-token window ask for the same as 512 rows
// (oneDNN 2.6's brgemm kernels do, on avx512 and AMX CPUs alike); otherwise, and when the
// kernel asks for the plain layout, `plain_data` is kept as it is. A layout per row count would
// mean a copy of the weights per row count.
MatmulWeights PackWeights(const DescribeMatmul& describe, const dnnl::memory::desc& plain,
                          const torch::Tensor& plain_data);

// The weights of output columns [begin, begin + count) of `weights` ([in, out]): a view of the
// same bytes, no copy. nullopt where the layout does not split there (a block straddles
// `begin`), or where the kernel for `count` columns (`describe`) would not read the slice's
// blocked layout as it is (it would reorder it on every call).
std::optional<MatmulWeights> SliceColumns(const MatmulWeights& weights, int64_t begin,
                                          int64_t count, const DescribeMatmul& describe);

// Primitives keyed by the shape they were built for (a row count for the linear layers, which
// the encoder rounds to a bucket; a padded pair of query and key counts for attention), built
// on first use, so a few dozen entries serve every batch. Thread-safe; an entry is never
// evicted, so references stay valid for the cache's life.
template <typename Built, typename Key = int64_t>
class PrimitiveCache {
 public:
  template <typename Build>
  const Built& Get(const Key& key, Build&& build) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = built_.find(key);
    if (it == built_.end()) it = built_.emplace(key, build(key)).first;
    return it->second;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return built_.size();
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<Key, Built> built_;
};

}  // namespace embedding::model_store
