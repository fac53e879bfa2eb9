#include "model_store/encoder/splade_head.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/encoder/dense_layers.h"
#include "model_store/encoder/encoder_layers.h"

namespace embedding::model_store {
namespace {

// Rows per block through the head: a block's logits are rows x vocabulary floats (8 MB for 64
// rows of BERT's 30,522), where a whole 512-token sequence's would be 62 MB.
constexpr int64_t kRowsPerBlock = 64;

// `name` as the checkpoint holds it: under the first of the spec's prefixes that has it, or
// bare (a head sits beside the encoder, not under its prefix).
std::string Located(const ArchitectureSpec& spec, const Checkpoint& checkpoint,
                    const std::string& name) {
  if (checkpoint.Find(name) != nullptr) return name;
  for (const std::string& prefix : spec.weight_prefixes) {
    if (checkpoint.Find(prefix + name) != nullptr) return prefix + name;
  }
  return name;
}

}  // namespace

absl::StatusOr<SpladeHead> LoadSpladeHead(const ArchitectureSpec& spec, const EncoderConfig& config,
                                          const Checkpoint& checkpoint) {
  const ArchitectureSpec::MlmHead& names = spec.mlm_head;
  if (names.transform.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "modules.json: SpladePooling needs a masked-LM head, and the ", spec.family,
        " family has none here (bert and distilbert have one)"));
  }
  const int64_t h = config.hidden_size, vocab = config.vocab_size;
  const std::string where = checkpoint.layout();
  const std::string source = absl::StrCat("config.json hidden_size ", h, ", vocab_size ", vocab);
  auto read = [&](const std::string& name, std::vector<int64_t> shape) {
    return ReadFp32Tensor(checkpoint, where, Located(spec, checkpoint, name), std::move(shape),
                          source);
  };
  SpladeHead head;
  ASSIGN_OR_RETURN(head.transform_weight, read(names.transform + ".weight", {h, h}));
  ASSIGN_OR_RETURN(head.transform_bias, read(names.transform + ".bias", {h}));
  ASSIGN_OR_RETURN(head.norm_weight, read(names.transform_norm + ".weight", {h}));
  ASSIGN_OR_RETURN(head.norm_bias, read(names.transform_norm + ".bias", {h}));
  head.norm_eps = config.layer_norm_eps;
  head.activation = config.hidden_act;
  // Tied to the word embeddings (tie_word_embeddings), a checkpoint saves the decoder once, as
  // the embeddings.
  const std::string decoder = Located(spec, checkpoint, names.decoder + ".weight");
  ASSIGN_OR_RETURN(head.decoder_weight,
                   read(checkpoint.Find(decoder) != nullptr ? names.decoder + ".weight"
                                                            : spec.word_embeddings + ".weight",
                        {vocab, h}));
  ASSIGN_OR_RETURN(head.decoder_bias, read(names.decoder_bias, {vocab}));
  return head;
}

SparseVector ApplySpladeHead(const SpladeHead& head, const torch::Tensor& states) {
  const torch::Tensor x = states.to(torch::kFloat32);
  torch::Tensor best;  // [V], the running max of log(1 + relu(logits))
  for (int64_t row = 0; row < x.size(0); row += kRowsPerBlock) {
    const torch::Tensor block = x.slice(0, row, std::min(row + kRowsPerBlock, x.size(0)));
    torch::Tensor t = Activate(torch::addmm(head.transform_bias, block, head.transform_weight.t()),
                               head.activation);
    t = torch::layer_norm(t, {t.size(1)}, head.norm_weight, head.norm_bias, head.norm_eps);
    const torch::Tensor weights =
        torch::log1p(torch::relu(torch::addmm(head.decoder_bias, t, head.decoder_weight.t())))
            .amax(0);
    best = best.defined() ? torch::maximum(best, weights) : weights;
  }
  SparseVector out;
  if (!best.defined()) return out;
  const torch::Tensor ids = torch::nonzero(best > 0).flatten();
  const torch::Tensor values = best.index_select(0, ids).contiguous();
  const int64_t* id_data = ids.data_ptr<int64_t>();
  out.ids.assign(id_data, id_data + ids.numel());
  out.weights.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
  return out;
}

}  // namespace embedding::model_store
