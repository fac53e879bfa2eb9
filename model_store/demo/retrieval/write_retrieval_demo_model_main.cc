// write_retrieval_demo_model: builds the demo model `./dev.sh run` serves (see
// model_store/demo/retrieval/retrieval_demo_model.h): WordNet and the man pages in, a BERT
// checkpoint out.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "model_store/demo/retrieval/retrieval_demo_model.h"

ABSL_FLAG(std::string, out, "", "Directory to write (created if needed).");
ABSL_FLAG(std::string, wordnet_dir, embedding::model_store::kWordNetDir,
          "WordNet 3.0 (Debian's wordnet-base).");
ABSL_FLAG(std::string, manpages_list, embedding::model_store::kManPagesList,
          "dpkg's file list of manpages-dev 6.03-2 (the technical text).");
ABSL_FLAG(int, vocab_size, 40000, "WordPiece vocabulary size.");
ABSL_FLAG(int, hidden, 256, "Hidden size (the word-vector dimensions).");
ABSL_FLAG(int, layers, 2, "Transformer layers.");
ABSL_FLAG(int, heads, 1, "Attention heads.");
ABSL_FLAG(int, max_positions, 512, "Window, special tokens included.");
ABSL_FLAG(double, attention_scale, 3.0, "Attention logit between two copies of a content word.");
ABSL_FLAG(double, sif, 1e-3, "Smooth-inverse-frequency constant.");
ABSL_FLAG(int, context_window, 10, "Co-occurrence window, tokens on each side.");
ABSL_FLAG(int, top_directions_removed, 2, "Leading principal directions removed from the table.");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Builds the retrieval demo model:\n"
      "  write_retrieval_demo_model --out=build/models/demo");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_out).empty()) {
    std::cerr << "--out is required\n";
    return 2;
  }
  embedding::model_store::RetrievalDemoSpec spec;
  spec.wordnet_dir = absl::GetFlag(FLAGS_wordnet_dir);
  spec.manpages_list = absl::GetFlag(FLAGS_manpages_list);
  spec.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  spec.hidden_size = absl::GetFlag(FLAGS_hidden);
  spec.num_layers = absl::GetFlag(FLAGS_layers);
  spec.num_heads = absl::GetFlag(FLAGS_heads);
  spec.max_positions = absl::GetFlag(FLAGS_max_positions);
  spec.attention_scale = absl::GetFlag(FLAGS_attention_scale);
  spec.sif = absl::GetFlag(FLAGS_sif);
  spec.context_window = absl::GetFlag(FLAGS_context_window);
  spec.top_directions_removed = absl::GetFlag(FLAGS_top_directions_removed);
  const absl::Time start = absl::Now();
  const absl::Status status =
      embedding::model_store::WriteRetrievalDemoModel(absl::GetFlag(FLAGS_out), spec);
  if (!status.ok()) {
    std::cerr << "write_retrieval_demo_model: " << status << "\n";
    return 1;
  }
  std::cerr << "wrote the retrieval demo model to " << absl::GetFlag(FLAGS_out) << " in "
            << absl::ToDoubleSeconds(absl::Now() - start) << " s\n";
  return 0;
}
