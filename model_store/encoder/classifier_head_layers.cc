#include "model_store/encoder/classifier_head_layers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "model_store/encoder/encoder_weights.h"

namespace embedding::model_store {
namespace {

// transformers' ACT2FN names, as DenseLayer spells them.
absl::StatusOr<std::string> HeadActivation(const ClassifierStep& step,
                                           const ClassifierConfig& classifier,
                                           const ClassifierHeadSpec& head) {
  if (step.activation == "tanh") return std::string("Tanh");
  if (step.activation == "relu") return std::string("ReLU");
  if (step.activation != "config") return std::string("Identity");
  const std::string& name = classifier.activation;
  if (name == "gelu") return std::string("GELU");
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return std::string("GELUTanh");
  if (name == "relu") return std::string("ReLU");
  if (name == "silu" || name == "swish") return std::string("SiLU");
  if (name == "tanh") return std::string("Tanh");
  return absl::InvalidArgumentError(absl::StrCat(
      "config.json: ", head.activation_field, " '", name,
      "' is not supported; supported: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, "
      "swish, tanh"));
}

// classifier_from_token's rows of the LM head (or of the word embeddings it is tied to), as
// the last layer: for two tokens the second's row less the first's, one logit whose sigmoid is
// the softmax over the two.
absl::StatusOr<torch::Tensor> LmHeadRows(const ArchitectureSpec& spec,
                                         const ClassifierConfig& classifier,
                                         const EncoderConfig& config,
                                         const Checkpoint& checkpoint) {
  std::string name = spec.classifier.lm_head + ".weight";
  const TensorView* view = checkpoint.Find(name);
  if (view == nullptr && classifier.lm_head_tied) {
    for (const std::string& prefix : spec.weight_prefixes) {
      name = prefix + spec.word_embeddings + ".weight";
      if ((view = checkpoint.Find(name)) != nullptr) break;
    }
  }
  if (view == nullptr) {
    return absl::DataLossError(
        absl::StrCat(checkpoint.layout(), ": no tensor '", spec.classifier.lm_head, ".weight'",
                     classifier.lm_head_tied ? " or word embeddings"
                                             : " (config.json tie_word_embeddings is false)",
                     " for classifier_from_token"));
  }
  if (view->shape != std::vector<int64_t>{config.vocab_size, config.hidden_size}) {
    return absl::DataLossError(
        absl::StrCat(checkpoint.layout(), ": tensor '", name, "' has shape [",
                     absl::StrJoin(view->shape, ", "), "]; expected [", config.vocab_size, ", ",
                     config.hidden_size, "] (config.json vocab_size, hidden_size)"));
  }
  ASSIGN_OR_RETURN(torch::Tensor rows, FloatingRows(*view, classifier.from_token_ids));
  rows = rows.to(torch::kFloat32);
  if (!torch::isfinite(rows).all().item<bool>()) {
    return absl::DataLossError(absl::StrCat(checkpoint.layout(), ": tensor '", name,
                                            "' holds NaN or infinite values in the rows read"));
  }
  if (rows.size(0) == 2) rows = (rows[1] - rows[0]).unsqueeze(0);
  return rows.contiguous();
}

}  // namespace

absl::StatusOr<std::vector<DenseLayer>> LoadClassifierHead(const ArchitectureSpec& spec,
                                                           const ClassifierConfig& classifier,
                                                           const EncoderConfig& config,
                                                           const Checkpoint& checkpoint) {
  const ClassifierHeadSpec& head = spec.classifier;
  const int64_t hidden = config.hidden_size;
  const auto labels = static_cast<int64_t>(classifier.labels.size());
  const std::string where = checkpoint.layout();
  const std::string source = absl::StrCat("config.json hidden_size ", hidden, ", ", labels,
                                          " label(s) in id2label / num_labels");
  std::vector<DenseLayer> layers;
  for (size_t i = 0; i < head.steps.size(); ++i) {
    const ClassifierStep& step = head.steps[i];
    const bool last = i + 1 == head.steps.size();
    const int64_t out = last ? labels : hidden;
    std::string name = step.linear;
    if (step.under_prefix) {  // the first prefix that holds it, else the bare name's error
      for (const std::string& prefix : spec.weight_prefixes) {
        if (checkpoint.Find(prefix + step.linear + ".weight") != nullptr) {
          name = prefix + step.linear;
          break;
        }
      }
    }
    DenseLayer layer;
    ASSIGN_OR_RETURN(layer.activation, HeadActivation(step, classifier, head));
    if (last && !classifier.from_token_ids.empty()) {
      ASSIGN_OR_RETURN(layer.weight, LmHeadRows(spec, classifier, config, checkpoint));
      layers.push_back(std::move(layer));
      break;
    }
    ASSIGN_OR_RETURN(layer.weight,
                     ReadFp32Tensor(checkpoint, where, name + ".weight", {out, hidden}, source));
    const bool biased =
        step.bias && (step.bias_field.empty() ||
                      std::find(classifier.biases_absent.begin(), classifier.biases_absent.end(),
                                step.bias_field) == classifier.biases_absent.end());
    if (biased) {
      ASSIGN_OR_RETURN(layer.bias, ReadFp32Tensor(checkpoint, where, name + ".bias", {out}, source));
    }
    if (!step.norm.empty()) {
      ASSIGN_OR_RETURN(layer.norm_weight, ReadFp32Tensor(checkpoint, where, step.norm + ".weight",
                                                         {out}, source));
      if (config.norm_bias) {
        ASSIGN_OR_RETURN(layer.norm_bias, ReadFp32Tensor(checkpoint, where, step.norm + ".bias",
                                                         {out}, source));
      }
      layer.norm_eps = config.layer_norm_eps;
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace embedding::model_store
