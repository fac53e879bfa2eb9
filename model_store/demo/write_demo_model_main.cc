// write_demo_model: writes a demo model directory of any supported family (seeded random
// weights; vectors are not semantically meaningful). Tests use a tiny one, benchmarks a
// BERT-base-shaped one.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "model_store/demo/demo_model_writer.h"

ABSL_FLAG(std::string, out, "", "Directory to write (created if needed).");
ABSL_FLAG(std::string, architecture, "bert",
          "bert | xlm-roberta | roberta | camembert | distilbert | mpnet | nomic_bert | new (GTE) | "
          "jina_bert (JinaBERT v2) | modernbert | qwen3 | qwen2 | mistral | llama.");
ABSL_FLAG(int, layers, 2, "Transformer layers.");
ABSL_FLAG(int, hidden, 128, "Hidden size.");
ABSL_FLAG(int, heads, 4, "Attention heads (must divide --hidden unless --head_dim is set).");
ABSL_FLAG(int, kv_heads, 0, "Decoders: key/value heads, dividing --heads (0: as many as --heads).");
ABSL_FLAG(int, head_dim, 0, "Decoders: a head's width (0: hidden / heads).");
ABSL_FLAG(int, intermediate, 0, "Feed-forward size; 0 means 4 x hidden.");
ABSL_FLAG(int, max_positions, 512, "Position-table size (window incl. [CLS]/[SEP]).");
ABSL_FLAG(int, vocab_size, 12000, "Vocabulary size (>= 8000).");
ABSL_FLAG(uint64_t, seed, 20241031, "Weight seed.");
ABSL_FLAG(std::string, pooling, "mean", "cls | mean | max | last_token.");
ABSL_FLAG(int, num_labels, 0,
          "> 0: a <Family>ForSequenceClassification checkpoint with this many labels (1: a "
          "reranker); 0: an embedder.");
ABSL_FLAG(bool, splade, false,
          "A SPLADE model (bert or distilbert): <Family>ForMaskedLM with sentence-transformers' "
          "MLMTransformer + SpladePooling.");
ABSL_FLAG(bool, causal_lm_reranker, false,
          "Decoders: Qwen/Qwen3-Reranker's layout, a *ForCausalLM with the chat tokens and no "
          "sentence-transformers modules (serve it with --hf_overrides).");
ABSL_FLAG(int, experts, 8, "nomic_bert_moe: experts per expert layer (top 2 are used).");
ABSL_FLAG(int, moe_every, 2,
          "nomic_bert_moe: every how many layers from layer 1 is an expert "
          "layer; 0: none.");
ABSL_FLAG(std::string, word_list, "/usr/share/dict/words", "Word list for the vocabulary.");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes a demo model directory. Example:\n"
      "  write_demo_model --out=/tmp/demo --layers=12 --hidden=768 "
      "--heads=12");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_out).empty()) {
    std::cerr << "--out is required\n";
    return 2;
  }
  embedding::model_store::DemoModelSpec spec;
  spec.architecture = absl::GetFlag(FLAGS_architecture);
  spec.num_layers = absl::GetFlag(FLAGS_layers);
  spec.hidden_size = absl::GetFlag(FLAGS_hidden);
  spec.num_heads = absl::GetFlag(FLAGS_heads);
  spec.num_kv_heads = absl::GetFlag(FLAGS_kv_heads);
  spec.head_dim = absl::GetFlag(FLAGS_head_dim);
  spec.intermediate_size = absl::GetFlag(FLAGS_intermediate);
  spec.max_positions = absl::GetFlag(FLAGS_max_positions);
  spec.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  spec.seed = absl::GetFlag(FLAGS_seed);
  spec.pooling = absl::GetFlag(FLAGS_pooling);
  spec.word_list = absl::GetFlag(FLAGS_word_list);
  spec.num_labels = absl::GetFlag(FLAGS_num_labels);
  spec.splade = absl::GetFlag(FLAGS_splade);
  spec.causal_lm_reranker = absl::GetFlag(FLAGS_causal_lm_reranker);
  spec.num_experts = absl::GetFlag(FLAGS_experts);
  spec.moe_every = absl::GetFlag(FLAGS_moe_every);
  const absl::Status status =
      embedding::model_store::WriteDemoModel(absl::GetFlag(FLAGS_out), spec);
  if (!status.ok()) {
    std::cerr << "write_demo_model: " << status << "\n";
    return 1;
  }
  std::cerr << "wrote demo model to " << absl::GetFlag(FLAGS_out)
            << " (random weights: vectors are not semantically meaningful)\n";
  return 0;
}
