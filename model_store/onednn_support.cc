#include "model_store/onednn_support.h"

namespace embedding::model_store {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* const engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::memory AsMemory(const dnnl::memory::desc& desc, const torch::Tensor& tensor) {
  return dnnl::memory(desc, CpuEngine(), tensor.data_ptr());
}

dnnl::memory::desc MatrixDesc(const torch::Tensor& matrix) {
  return dnnl::memory::desc({matrix.size(0), matrix.size(1)}, dnnl::memory::data_type::f32,
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
  if (!same) return {plain, plain_data};
  MatmulWeights packed{preferred,
                       torch::empty({static_cast<int64_t>(preferred.get_size())}, torch::kUInt8)};
  dnnl::stream stream(CpuEngine());
  dnnl::memory from = AsMemory(plain, plain_data), to = AsMemory(preferred, packed.data);
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return packed;
}

}  // namespace embedding::model_store
