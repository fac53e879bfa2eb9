#include "client/embedctl/retrieval_task.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/length_buckets.h"

namespace embedding::client {
namespace {
namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--corpus: ", path.string(), ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TokenizedDocument {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> byte_spans;  // per content token
};

// The text from token `begin` to token `end` (exclusive).
std::string Slice(const TokenizedDocument& doc, uint32_t begin, uint32_t end) {
  const uint32_t from = doc.byte_spans[begin].first;
  return doc.text.substr(from, doc.byte_spans[end - 1].second - from);
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadCorpus(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> documents;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      auto text = ReadFile(file);
      if (!text.ok()) return text.status();
      if (!text->empty()) documents.push_back(*std::move(text));
    }
  } else {
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) documents.push_back(std::move(line));
  }
  if (documents.empty())
    return absl::InvalidArgumentError(absl::StrCat("--corpus: ", path, " holds no documents"));
  return documents;
}

absl::StatusOr<std::vector<BucketTask>> BuildRetrievalTasks(EmbeddingClient& client,
                                                            const std::vector<std::string>& corpus,
                                                            const RetrievalTaskOptions& options) {
  std::vector<TokenizedDocument> docs;
  for (const std::string& text : corpus) {
    v1::TokenizeRequest request;
    request.set_model(options.model);
    request.add_inputs(text);
    request.set_add_special_tokens(false);
    auto response = client.Tokenize(request);
    if (!response.ok()) return response.status();
    TokenizedDocument doc{text, {}};
    for (const auto& token : response->inputs(0).tokens())
      doc.byte_spans.emplace_back(token.byte_span().start(), token.byte_span().end());
    docs.push_back(std::move(doc));
  }
  // std::mt19937_64's output is fixed by the standard (its distributions are not).
  std::mt19937_64 rng(options.seed);
  std::vector<BucketTask> tasks;
  for (const LengthBucket& bucket : AllLengthBuckets()) {
    const uint64_t lower = std::max<uint64_t>(bucket.min_tokens, 2 * options.query_tokens);
    uint64_t upper =
        bucket.max_tokens == UINT64_MAX ? bucket.min_tokens * 3 / 2 : bucket.max_tokens;
    if (options.max_tokens > 0) upper = std::min<uint64_t>(upper, options.max_tokens);
    if (upper < lower) continue;
    BucketTask task{bucket.label, static_cast<uint32_t>(bucket.min_tokens), {}, {}};
    for (const TokenizedDocument& doc : docs) {
      if (task.documents.size() >= options.max_documents) break;
      const uint64_t available = std::min<uint64_t>(upper, doc.byte_spans.size());
      if (available < lower) continue;
      const auto length = static_cast<uint32_t>(lower + rng() % (available - lower + 1));
      const auto start = static_cast<uint32_t>(rng() % (length - options.query_tokens + 1));
      task.documents.push_back(Slice(doc, 0, length));
      task.queries.push_back(Slice(doc, start, start + options.query_tokens));
    }
    if (task.documents.size() >= options.min_documents) tasks.push_back(std::move(task));
  }
  return tasks;
}

absl::StatusOr<std::string> QueryPromptName(const v1::ModelInfo& info,
                                            const std::string& requested) {
  const auto& names = info.prompt_names();
  const bool has_query = std::find(names.begin(), names.end(), "query") != names.end();
  if (requested.empty()) return has_query ? std::string("query") : std::string();
  if (std::find(names.begin(), names.end(), requested) != names.end()) return requested;
  return absl::InvalidArgumentError(absl::StrCat("--prompt-name: '", requested,
                                                 "' is not one of the model's prompts [",
                                                 absl::StrJoin(names, ", "), "]"));
}

BucketTask SplitHalf(const BucketTask& task, bool held_out) {
  BucketTask half{task.bucket, task.min_tokens, {}, {}};
  for (size_t i = held_out ? 1 : 0; i < task.documents.size(); i += 2) {
    half.documents.push_back(task.documents[i]);
    half.queries.push_back(task.queries[i]);
  }
  return half;
}

absl::StatusOr<std::vector<std::vector<float>>> EmbedInBatches(
    EmbeddingClient& client, const std::vector<std::string>& texts, const EmbedOptions& options,
    size_t batch, const std::function<void()>& on_call) {
  std::vector<std::vector<float>> out;
  for (size_t start = 0; start < texts.size(); start += batch) {
    const std::vector<std::string> slice(texts.begin() + start,
                                         texts.begin() + std::min(texts.size(), start + batch));
    auto response = client.Embed(MakeEmbedRequest(slice, options));
    if (!response.ok()) return response.status();
    for (auto& v : ToVectors(*response)) out.push_back(std::move(v));
    if (on_call) on_call();
  }
  return out;
}

double MeanReciprocalRankAt10(const std::vector<std::vector<float>>& queries,
                              const std::vector<std::vector<float>>& documents) {
  if (queries.empty()) return 0;
  double total = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const double right = Dot(queries[i], documents[i]);
    size_t rank = 1;
    for (size_t j = 0; j < documents.size(); ++j)
      if (j != i && Dot(queries[i], documents[j]) >= right) ++rank;
    if (rank <= 10) total += 1.0 / static_cast<double>(rank);
  }
  return total / static_cast<double>(queries.size());
}

}  // namespace embedding::client
