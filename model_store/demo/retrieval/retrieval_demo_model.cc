#include "model_store/demo/retrieval/retrieval_demo_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/demo/demo_tokenizer_json.h"
#include "model_store/demo/retrieval/ppmi_vectors.h"
#include "model_store/demo/retrieval/symmetric_eigen.h"
#include "model_store/formats/safetensors_writer.h"
#include "model_store/formats/sentence_transformers_writer.h"
#include "model_store/spec/architecture.h"
#include "model_store/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// The LayerNorms' epsilon. Content vectors are scaled so that their variance over the hidden
// dimensions stays below 1% of it: LayerNorm then multiplies by ~1 instead of normalising,
// and a frequent word's small vector stays small through the layers.
constexpr double kLayerNormEps = 1.0;
constexpr double kContentVariance = 0.01;

absl::Status ValidateSpec(const RetrievalDemoSpec& spec) {
  if (spec.vocab_size < 1000 || spec.vocab_size > 200000)
    return absl::InvalidArgumentError("vocab_size: must be in [1000, 200000]");
  if (spec.hidden_size < 8 || spec.hidden_size > 1024)
    return absl::InvalidArgumentError("hidden_size: must be in [8, 1024]");
  if (spec.num_heads <= 0 || spec.hidden_size % spec.num_heads != 0)
    return absl::InvalidArgumentError("num_heads: must be positive and divide hidden_size");
  if (spec.num_layers < 1) return absl::InvalidArgumentError("num_layers: must be >= 1");
  if (spec.max_positions < 3) return absl::InvalidArgumentError("max_positions: must be >= 3");
  if (!(spec.attention_scale > 0))
    return absl::InvalidArgumentError("attention_scale: must be > 0");
  if (!(spec.sif > 0)) return absl::InvalidArgumentError("sif: must be > 0");
  if (spec.context_window < 1 || spec.context_window > 50)
    return absl::InvalidArgumentError("context_window: must be in [1, 50]");
  if (spec.top_directions_removed < 0 || spec.top_directions_removed >= spec.hidden_size)
    return absl::InvalidArgumentError("top_directions_removed: must be in [0, hidden_size)");
  return absl::OkStatus();
}

// Special tokens, single characters and their "##" continuations (so WordPiece can spell any
// ASCII word), common English endings, then the corpus's commonest words (ties by spelling).
std::vector<std::string> BuildVocabulary(const std::vector<std::string>& documents, int size) {
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 33; c < 127; ++c) vocab.push_back(std::string(1, c));
  for (char c = 33; c < 127; ++c)
    if (absl::ascii_isalnum(c)) vocab.push_back(absl::StrCat("##", std::string(1, c)));
  for (const char* ending :
       {"s",    "es",    "ed",    "ing",    "ly",   "er",  "ers", "est", "ness",
        "ment", "ments", "ation", "ations", "al",   "ity", "ous", "ive", "ic",
        "ical", "able",  "ism",   "ist",    "ists", "ion", "ions"})
    vocab.push_back(absl::StrCat("##", ending));
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string& doc : documents) {
    std::string word;
    for (char c : doc) {
      if (absl::ascii_isalnum(c)) {
        word.push_back(absl::ascii_tolower(c));
      } else if (!word.empty()) {
        ++counts[word];
        word.clear();
      }
    }
    if (!word.empty()) ++counts[word];
  }
  std::vector<std::pair<int64_t, std::string>> ranked;
  for (auto& [word, count] : counts)
    if (word.size() > 1) ranked.emplace_back(-count, word);
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [negative_count, word] : ranked) {
    if (static_cast<int>(vocab.size()) >= size) break;
    vocab.push_back(word);
  }
  return vocab;
}

// Unit content directions scaled by smooth inverse frequency, centred over the dimensions (so
// LayerNorm's mean subtraction is a no-op), with each source corpus's common direction (its
// frequency-weighted mean) removed: it is shared by every text of that kind and would pull
// them all together (two technical texts on unrelated topics would look alike).
std::vector<float> EmbeddingTable(const WordVectors& words,
                                  const std::vector<std::vector<int64_t>>& source_counts,
                                  const RetrievalDemoSpec& spec) {
  const int h = words.dims;
  const auto vocab = static_cast<int64_t>(words.counts.size());
  double total = 0;
  for (int64_t c : words.counts) total += static_cast<double>(c);
  std::vector<double> unit(words.values.size(), 0.0);
  for (int64_t v = 0; v < vocab; ++v) {
    double* row = &unit[v * h];
    double mean = 0, norm = 0;
    for (int d = 0; d < h; ++d) mean += words.values[v * h + d] / h;
    for (int d = 0; d < h; ++d) norm += std::pow(words.values[v * h + d] - mean, 2);
    if (words.counts[v] == 0 || norm <= 0) continue;
    for (int d = 0; d < h; ++d) row[d] = (words.values[v * h + d] - mean) / std::sqrt(norm);
  }
  // An orthonormal basis of the sources' common directions (Gram-Schmidt).
  std::vector<std::vector<double>> basis;
  for (const std::vector<int64_t>& counts : source_counts) {
    std::vector<double> common(h, 0.0);
    for (int64_t v = 0; v < vocab; ++v)
      for (int d = 0; d < h; ++d) common[d] += static_cast<double>(counts[v]) * unit[v * h + d];
    for (const std::vector<double>& b : basis) {
      double along = 0;
      for (int d = 0; d < h; ++d) along += common[d] * b[d];
      for (int d = 0; d < h; ++d) common[d] -= along * b[d];
    }
    double norm = 0;
    for (double c : common) norm += c * c;
    if (norm <= 0) continue;
    for (double& c : common) c /= std::sqrt(norm);
    basis.push_back(std::move(common));
  }
  const double scale = std::sqrt(kContentVariance * kLayerNormEps * h);
  std::vector<float> table(static_cast<size_t>(vocab) * h, 0.0f);
  for (int64_t v = 0; v < vocab; ++v) {
    if (words.counts[v] == 0) continue;
    double* row = &unit[v * h];
    for (const std::vector<double>& b : basis) {
      double along = 0;
      for (int d = 0; d < h; ++d) along += row[d] * b[d];
      for (int d = 0; d < h; ++d) row[d] -= along * b[d];
    }
    double norm = 0;
    for (int d = 0; d < h; ++d) norm += row[d] * row[d];
    if (norm <= 0) continue;
    const double weight = spec.sif / (spec.sif + static_cast<double>(words.counts[v]) / total);
    for (int d = 0; d < h; ++d)
      table[v * h + d] = static_cast<float>(row[d] / std::sqrt(norm) * weight * scale);
  }
  return table;
}

// "All but the top" (Mu & Viswanath 2018): the table's leading principal directions are shared
// by words of every topic (register and frequency, not meaning). Each row loses its part along
// them and keeps its length, so a frequent word stays small.
void RemoveTopDirections(std::vector<float>& table, int h, int k, uint64_t seed) {
  if (k <= 0) return;
  const auto rows = static_cast<int64_t>(table.size() / h);
  std::vector<double> gram(static_cast<size_t>(h) * h, 0.0);
  for (int64_t v = 0; v < rows; ++v) {
    const float* row = &table[v * h];
    for (int a = 0; a < h; ++a)
      for (int b = a; b < h; ++b) gram[a * h + b] += static_cast<double>(row[a]) * row[b];
  }
  SparseSymmetric dense;
  dense.n = h;
  for (int a = 0; a < h; ++a) {
    dense.row_start.push_back(static_cast<int64_t>(dense.column.size()));
    for (int b = 0; b < h; ++b) {
      dense.column.push_back(b);
      dense.value.push_back(a <= b ? gram[a * h + b] : gram[b * h + a]);
    }
  }
  dense.row_start.push_back(static_cast<int64_t>(dense.column.size()));
  const EigenPairs top = LeadingEigenPairs(dense, k, /*oversampling=*/16,
                                           /*power_iterations=*/4, seed);
  for (int64_t v = 0; v < rows; ++v) {
    float* row = &table[v * h];
    double before = 0, after = 0;
    std::vector<double> r(row, row + h);
    for (double x : r) before += x * x;
    for (int c = 0; c < k; ++c) {
      double along = 0;
      for (int d = 0; d < h; ++d) along += r[d] * top.vectors[d * k + c];
      for (int d = 0; d < h; ++d) r[d] -= along * top.vectors[d * k + c];
    }
    for (double x : r) after += x * x;
    if (after <= 0) continue;
    for (int d = 0; d < h; ++d) row[d] = static_cast<float>(r[d] * std::sqrt(before / after));
  }
}

F32Tensor Filled(std::vector<int64_t> shape, float value) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {std::move(shape), std::vector<float>(n, value)};
}

F32Tensor Identity(int64_t n, float scale) {
  F32Tensor t = Filled({n, n}, 0.0f);
  for (int64_t i = 0; i < n; ++i) t.values[i * n + i] = scale;
  return t;
}

std::map<std::string, F32Tensor> Weights(const RetrievalDemoSpec& spec, std::vector<float> table,
                                         int64_t vocab, int64_t intermediate) {
  const ArchitectureSpec& arch = **FindFamily("bert");
  const int64_t h = spec.hidden_size;
  // Logit between two full-weight copies of one word: c² · scale² / sqrt(d_head) = attention_scale.
  const double d_head = static_cast<double>(h) / spec.num_heads;
  const double content_norm2 = kContentVariance * kLayerNormEps * h;
  const auto c = static_cast<float>(
      std::sqrt(spec.attention_scale * std::sqrt(d_head) / content_norm2 * spec.num_heads));
  std::map<std::string, F32Tensor> w;
  w[arch.word_embeddings + ".weight"] = {{vocab, h}, std::move(table)};
  w[arch.position_embeddings + ".weight"] = Filled({spec.max_positions, h}, 0.0f);
  w[arch.token_type_embeddings + ".weight"] = Filled({2, h}, 0.0f);
  auto norm = [&](const std::string& name, float gamma) {
    w[name + ".weight"] = Filled({h}, gamma);
    w[name + ".bias"] = Filled({h}, 0.0f);
  };
  auto linear = [&](const std::string& name, F32Tensor weight) {
    const int64_t rows = weight.shape[0];
    w[name + ".weight"] = std::move(weight);
    w[name + ".bias"] = Filled({rows}, 0.0f);
  };
  norm(arch.embeddings_norm, 1.0f);
  for (int i = 0; i < spec.num_layers; ++i) {
    const std::string layer = absl::StrCat(arch.layer_prefix, i, ".");
    linear(layer + arch.query, Identity(h, c));
    linear(layer + arch.key, Identity(h, c));
    linear(layer + arch.value, Identity(h, 1.0f));
    linear(layer + arch.attention_output, Identity(h, 1.0f));
    norm(layer + arch.attention_norm, 0.5f);  // (x + attention(x)) / 2: norms stay put
    linear(layer + arch.mlp_in, Filled({intermediate, h}, 0.0f));
    linear(layer + arch.mlp_out, Filled({h, intermediate}, 0.0f));
    norm(layer + arch.output_norm, 1.0f);
  }
  return w;
}

}  // namespace

absl::Status WriteRetrievalDemoModel(const std::string& dir, const RetrievalDemoSpec& spec) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  // General English, then technical text; each source's token counts are kept apart.
  ASSIGN_OR_RETURN(std::vector<std::string> corpus, ReadWordNetCorpus(spec.wordnet_dir));
  const size_t general_documents = corpus.size();
  ASSIGN_OR_RETURN(std::vector<std::string> technical, ReadManPagesCorpus(spec.manpages_list));
  corpus.insert(corpus.end(), std::make_move_iterator(technical.begin()),
                std::make_move_iterator(technical.end()));
  const std::vector<std::string> vocab = BuildVocabulary(corpus, spec.vocab_size);
  const Json tokenizer_json = WordPieceTokenizerJson(vocab);
  ASSIGN_OR_RETURN(auto tokenizer, Tokenizer::FromJson("tokenizer.json", tokenizer_json.dump()));
  std::vector<std::vector<int32_t>> documents;
  documents.reserve(corpus.size());
  for (const std::string& text : corpus) {
    ASSIGN_OR_RETURN(TokenizedText tokens, tokenizer->Tokenize(text));
    documents.push_back(std::move(tokens.ids));
  }
  PpmiOptions ppmi;
  ppmi.dims = spec.hidden_size;
  ppmi.seed = spec.seed;
  ppmi.window = spec.context_window;
  const WordVectors words = BuildPpmiVectors(documents, static_cast<int>(vocab.size()), ppmi);
  std::vector<std::vector<int64_t>> source_counts(2, std::vector<int64_t>(vocab.size(), 0));
  for (size_t i = 0; i < documents.size(); ++i)
    for (int32_t id : documents[i]) ++source_counts[i < general_documents ? 0 : 1][id];

  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": ", ec.message()));
  const int64_t intermediate = 4;  // the feed-forward blocks are zero: keep them tiny
  const Json config = {{"architectures", {"BertModel"}},
                       {"model_type", "bert"},
                       {"vocab_size", vocab.size()},
                       {"hidden_size", spec.hidden_size},
                       {"num_hidden_layers", spec.num_layers},
                       {"num_attention_heads", spec.num_heads},
                       {"intermediate_size", intermediate},
                       {"max_position_embeddings", spec.max_positions},
                       {"type_vocab_size", 2},
                       {"hidden_act", "gelu"},
                       {"layer_norm_eps", kLayerNormEps},
                       {"pad_token_id", 0},
                       {"retrieval_demo",
                        {{"corpus", "wordnet-base 1:3.0-37, manpages-dev 6.03-2"},
                         {"seed", spec.seed},
                         {"attention_scale", spec.attention_scale},
                         {"sif", spec.sif},
                         {"context_window", spec.context_window},
                         {"top_directions_removed", spec.top_directions_removed}}}};
  RETURN_IF_ERROR(WriteTextFile(root / "config.json", config.dump(2)));
  RETURN_IF_ERROR(WriteTextFile(root / "tokenizer.json", tokenizer_json.dump()));
  const Json settings = {{"do_lower_case", true},
                         {"unk_token", "[UNK]"},
                         {"cls_token", "[CLS]"},
                         {"sep_token", "[SEP]"},
                         {"pad_token", "[PAD]"},
                         {"mask_token", "[MASK]"},
                         {"model_max_length", spec.max_positions}};
  RETURN_IF_ERROR(WriteTextFile(root / "tokenizer_config.json", settings.dump(2)));
  RETURN_IF_ERROR(WriteSentenceTransformersFiles(root, spec.hidden_size, "mean",
                                                 /*normalize=*/false, Json::object()));
  RETURN_IF_ERROR(WriteTextFile(
      root / "README.md",
      "# Retrieval demo model\n\nBuilt by write_retrieval_demo_model from WordNet 3.0 "
      "(Debian's wordnet-base): PPMI word vectors in a hand-set BERT. Small and fast; its "
      "vectors carry word meaning, enough to try retrieval, calibration and the collapse "
      "metrics. Not a production model.\n"));
  std::vector<float> table = EmbeddingTable(words, source_counts, spec);
  RemoveTopDirections(table, spec.hidden_size, spec.top_directions_removed, spec.seed);
  return WriteSafetensors(
      (root / "model.safetensors").string(),
      Weights(spec, std::move(table), static_cast<int64_t>(vocab.size()), intermediate));
}

}  // namespace embedding::model_store
