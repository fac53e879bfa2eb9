#include "model_store/encoder/linear_layer.h"

#include <ATen/record_function.h>

#include <optional>

#include "model_store/kernels/fp32_matmul.h"
#include "model_store/kernels/int8_matmul.h"

namespace embedding::model_store {

namespace {

// `adapters` with both products per adapter in oneDNN's fp32 matmul, their outputs narrowed
// to [begin, begin + count) (count < 0: all): fp32 whatever the layer's kernel, like the router.
// A slice keeps the down products it was cut from: they read the same inputs.
// One [rows, rank] x [rank, out] product writes the term in one pass, where rank elementwise
// steps took 6-11% of an fp32 forward.
std::shared_ptr<const LowRankAdapters> PackAdapters(const LowRankAdapters& adapters, int64_t begin,
                                                    int64_t count) {
  auto packed = std::make_shared<LowRankAdapters>(adapters);
  packed->up_packed.clear();
  const auto zeros = [](int64_t n) { return torch::zeros({n}, torch::kFloat32); };
  for (size_t t = 0; t < adapters.down.size(); ++t) {
    if (count >= 0) packed->up[t] = adapters.up[t].narrow(1, begin, count);
    const torch::Tensor up = packed->up[t].t().contiguous();  // [out, rank]
    if (adapters.down_packed.empty()) {
      packed->down_packed.push_back(
          std::make_shared<const Fp32Matmul>(adapters.down[t], zeros(adapters.down[t].size(0))));
    }
    packed->up_packed.push_back(std::make_shared<const Fp32Matmul>(up, zeros(up.size(0))));
  }
  return packed;
}

// `w`'s output rows [begin, begin + count), sharing its weights; nullopt where its packed
// layout does not split there.
std::optional<LinearWeights> OutputSlice(const LinearWeights& w, int64_t begin, int64_t count) {
  LinearWeights slice;
  slice.bias = w.bias.narrow(0, begin, count);
  if (w.adapters && !w.adapters->down_packed.empty()) {
    slice.adapters = PackAdapters(*w.adapters, begin, count);
  } else if (w.adapters) {  // LibTorch's ops: the up products' columns, as views
    auto narrowed = std::make_shared<LowRankAdapters>(*w.adapters);
    for (torch::Tensor& up : narrowed->up) up = up.narrow(1, begin, count);
    slice.adapters = std::move(narrowed);
  }
  if (w.packed) {
    slice.packed = w.packed->Columns(begin, count);
    if (!slice.packed) return std::nullopt;
  } else {
    slice.weight = w.weight.narrow(0, begin, count);
  }
  return slice;
}

}  // namespace

absl::Status PrepareLinearLayers(LinearKernel kernel, int64_t kv_heads, EncoderWeights* w) {
  for (LayerWeights& layer : w->layers) {
    if (kernel != LinearKernel::kDefault && kernel != LinearKernel::kTorchOps) {
      std::vector<LinearWeights*> linears = {&layer.qkv, &layer.attention_output, &layer.mlp_in,
                                             &layer.mlp_out};
      for (size_t e = 0; e < layer.moe_in.size(); ++e)
        linears.insert(linears.end(), {&layer.moe_in[e], &layer.moe_out[e]});
      // The router stays fp32 whatever the kernel: it ranks the experts, and a rounding that
      // swapped two would move a row by a whole expert.
      if (layer.moe_router.weight.defined()) {
        layer.moe_router.packed =
            std::make_shared<const Fp32Matmul>(layer.moe_router.weight, layer.moe_router.bias);
        layer.moe_router.weight = torch::Tensor();
      }
      for (LinearWeights* linear : linears) {
        if (!linear->weight.defined()) continue;  // an expert layer has no plain MLP
        if (kernel == LinearKernel::kInt8) {
          linear->packed = std::make_shared<const Int8Matmul>(linear->weight, linear->bias);
        } else {
          linear->packed = std::make_shared<const Fp32Matmul>(linear->weight, linear->bias);
        }
        linear->weight = torch::Tensor();  // the packed copy is all that is used
      }
    }
    for (LinearWeights* linear :
         {&layer.qkv, &layer.attention_output, &layer.mlp_in, &layer.mlp_out}) {
      if (linear->adapters && kernel != LinearKernel::kTorchOps) {
        linear->adapters = PackAdapters(*linear->adapters, 0, -1);
      }
    }
    const int64_t per_head = layer.qkv.bias.size(0) / kv_heads;
    layer.qkv_heads.clear();
    for (int64_t h = 0; h < kv_heads; ++h) {
      std::optional<LinearWeights> slice = OutputSlice(layer.qkv, h * per_head, per_head);
      if (!slice) {
        layer.qkv_heads.clear();
        break;
      }
      layer.qkv_heads.push_back(*std::move(slice));
    }
  }
  return absl::OkStatus();
}

void AddAdapters(const LowRankAdapters* adapters, const torch::Tensor& row_adapters,
                 const std::function<torch::Tensor(size_t t, const torch::Tensor& rows)>& low,
                 torch::Tensor& out) {
  if (adapters == nullptr || !row_adapters.defined()) return;
  for (size_t t = 0; t < adapters->up.size(); ++t) {
    const torch::Tensor rows = row_adapters.eq(static_cast<int64_t>(t)).nonzero().squeeze(1);
    if (rows.numel() == 0) continue;
    // Every row on this adapter (a batch of one task): no gather and no scatter, the same
    // arithmetic per row.
    const bool all = rows.numel() == out.size(0);
    // [rows, rank] x [rank, out]: a linear layer's through oneDNN; a table's as rank
    // elementwise steps, in one order whatever the row count (a BLAS product may pick another
    // kernel for one row than for many).
    const torch::Tensor factors = low(t, rows);
    torch::Tensor term;
    if (!adapters->up_packed.empty()) {
      term = adapters->up_packed[t]->Apply(factors);
    } else {
      const torch::Tensor& up = adapters->up[t];
      term = factors.slice(1, 0, 1) * up.slice(0, 0, 1);
      for (int64_t k = 1; k < up.size(0); ++k) {
        term.addcmul_(factors.slice(1, k, k + 1), up.slice(0, k, k + 1));
      }
    }
    if (all) {
      out.add_(term.to(out.scalar_type()));
    } else {
      out.index_add_(0, rows, term.to(out.scalar_type()));
    }
  }
}

torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w,
                          const torch::Tensor& row_adapters) {
  // Named in LibTorch's profiler (op_profile.py), which does not see oneDNN's own calls.
  RECORD_FUNCTION("embedding::linear", std::vector<c10::IValue>());
  torch::Tensor out = w.packed ? w.packed->Apply(x) : torch::linear(x, w.weight, w.bias);
  AddAdapters(
      w.adapters.get(), row_adapters,
      [&](size_t t, const torch::Tensor& rows) {
        const torch::Tensor in =
            (rows.numel() == x.size(0) ? x : x.index_select(0, rows)).to(torch::kFloat32);
        return w.adapters->down_packed.empty() ? torch::linear(in, w.adapters->down[t])
                                               : w.adapters->down_packed[t]->Apply(in);
      },
      out);
  return out;
}

torch::Tensor ApplyLinearPair(const torch::Tensor& x, const LinearWeights& first,
                              const PackedLinear::ActivateRows& activate,
                              const LinearWeights& second, const torch::Tensor& row_adapters) {
  const auto adapted = [&](const LinearWeights& w) {
    return w.adapters != nullptr && row_adapters.defined();
  };
  if (!first.packed || !second.packed || adapted(first) || adapted(second)) {
    const torch::Tensor hidden = ApplyLinear(x, first, row_adapters);
    activate(hidden);
    return ApplyLinear(hidden, second, row_adapters);
  }
  RECORD_FUNCTION("embedding::linear_pair", std::vector<c10::IValue>());
  return first.packed->ApplyThrough(x, activate, *second.packed);
}

}  // namespace embedding::model_store
