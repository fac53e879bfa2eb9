#include "model_store/kernels/onednn_support.h"

namespace embedding::model_store {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* const engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::memory AsMemory(const dnnl::memory::desc& desc, const torch::Tensor& tensor) {
  return dnnl::memory(desc, CpuEngine(), tensor.data_ptr());
}

dnnl::memory::desc MatrixDesc(const torch::Tensor& matrix) {
  const auto type = matrix.scalar_type() == torch::kBFloat16 ? dnnl::memory::data_type::bf16
                                                             : dnnl::memory::data_type::f32;
  return dnnl::memory::desc({matrix.size(0), matrix.size(1)}, type,
                            {matrix.stride(0), matrix.stride(1)});
}

torch::Tensor Scratchpad(const dnnl::primitive_desc_base& pd) {
  return torch::empty({static_cast<int64_t>(pd.scratchpad_desc().get_size())}, torch::kUInt8);
}

MatmulWeights PackWeights(const DescribeMatmul& describe, const dnnl::memory::desc& plain,
                          const torch::Tensor& plain_data) {
  const dnnl::memory::desc any(plain.dims(), plain.data_type(), dnnl::memory::format_tag::any);
  const dnnl::memory::desc preferred = describe(512, any).weights_desc();
  bool same = preferred != plain;
  for (int64_t rows : {1, 8192}) same = same && describe(rows, any).weights_desc() == preferred;
  if (!same) return {plain, plain_data, false};
  MatmulWeights packed{
      preferred, torch::empty({static_cast<int64_t>(preferred.get_size())}, torch::kUInt8), true};
  dnnl::stream stream(CpuEngine());
  dnnl::memory from = AsMemory(plain, plain_data), to = AsMemory(preferred, packed.data);
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return packed;
}

std::optional<MatmulWeights> SliceColumns(const MatmulWeights& weights, int64_t begin,
                                          int64_t count, const DescribeMatmul& describe) {
  const dnnl::memory::dims dims = weights.desc.dims();
  dnnl::memory::desc slice =
      weights.desc.submemory_desc({dims[0], count}, {0, begin}, /*allow_empty=*/true);
  // Zero when the blocks do not split at `begin`; extra flags would place compensation data
  // after the whole buffer, not after the slice.
  if (slice.data.ndims == 0 || slice.data.extra.flags != 0) return std::nullopt;
  // The slice as a layout of its own, starting at its first byte.
  const int64_t offset =
      slice.data.offset0 * static_cast<int64_t>(dnnl::memory::data_type_size(slice.data_type()));
  slice.data.offset0 = 0;
  if (weights.packed) {
    const dnnl::memory::desc any({dims[0], count}, slice.data_type(),
                                 dnnl::memory::format_tag::any);
    for (int64_t rows : {1, 512, 8192}) {
      if (describe(rows, any).weights_desc() != slice) return std::nullopt;
    }
  }
  // The bytes from the slice's first on: the tensor keeps the whole buffer alive.
  const torch::Tensor bytes = weights.data.view(torch::kUInt8).reshape({-1});
  return MatmulWeights{slice, bytes.narrow(0, offset, bytes.numel() - offset), weights.packed};
}

}  // namespace embedding::model_store
