#include "client/embedctl/retrieval_task.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/embedctl/task_uniqueness.h"
#include "common/length_buckets.h"
#include "common/name_table.h"
#include "nlohmann/json.hpp"

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

// A haystack's room for its fact, in tokens: the pass key's sentence took 20 WordPiece tokens,
// a needle is twice a query's span.
uint32_t FactRoom(const RetrievalTaskOptions& options) {
  return std::max<uint32_t>(32, 2 * options.query_tokens + 8);
}

// The text from token `begin` to token `end` (exclusive).
std::string Slice(const TokenizedText& doc, uint32_t begin, uint32_t end) {
  const uint32_t from = doc.byte_spans[begin].first;
  return doc.text.substr(from, doc.byte_spans[end - 1].second - from);
}

// `tokens` tokens of the corpus end to end from document `first` on (wrapping, each document
// at most once), joined by spaces; empty when the corpus holds fewer. `used` gets the documents
// it read.
TokenizedText Haystack(const std::vector<TokenizedText>& corpus, size_t first, uint32_t tokens,
                       std::vector<bool>* used) {
  TokenizedText out;
  used->assign(corpus.size(), false);
  for (size_t k = 0; k < corpus.size() && out.byte_spans.size() < tokens; ++k) {
    const size_t d = (first + k) % corpus.size();
    const TokenizedText& doc = corpus[d];
    const size_t take = std::min<size_t>(doc.byte_spans.size(), tokens - out.byte_spans.size());
    if (take == 0) continue;
    (*used)[d] = true;
    if (!out.text.empty()) out.text += ' ';
    const uint32_t offset = static_cast<uint32_t>(out.text.size());
    const uint32_t from = doc.byte_spans[0].first;
    out.text += Slice(doc, 0, static_cast<uint32_t>(take));
    for (size_t t = 0; t < take; ++t) {
      out.byte_spans.emplace_back(offset + doc.byte_spans[t].first - from,
                                  offset + doc.byte_spans[t].second - from);
    }
  }
  if (out.byte_spans.size() < tokens) return {};
  return out;
}

// `haystack` with `fact` inserted before token round(depth x tokens), spaced as words.
std::string Insert(const TokenizedText& haystack, float depth, const std::string& fact) {
  const size_t n = haystack.byte_spans.size();
  const size_t at = std::min(n, static_cast<size_t>(std::lround(depth * static_cast<float>(n))));
  const size_t byte = at < n ? haystack.byte_spans[at].first : haystack.text.size();
  std::vector<absl::string_view> parts;
  for (absl::string_view part :
       {absl::string_view(haystack.text).substr(0, byte), absl::string_view(fact),
        absl::string_view(haystack.text).substr(byte)}) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) parts.push_back(part);
  }
  return absl::StrJoin(parts, " ");
}

// The bucket's document lengths in content tokens: [lower, upper], or lower > upper when the
// bucket is out of reach.
std::pair<uint64_t, uint64_t> LengthRange(const LengthBucket& bucket, uint64_t lower_floor,
                                          const RetrievalTaskOptions& options) {
  uint64_t upper = bucket.max_tokens == UINT64_MAX ? bucket.min_tokens * 3 / 2 : bucket.max_tokens;
  if (options.max_tokens > 0) upper = std::min<uint64_t>(upper, options.max_tokens);
  return {std::max<uint64_t>(bucket.min_tokens, lower_floor), upper};
}

// A bucket's task, or why a bucket within reach got none (empty when it is out of reach).
struct BuiltTask {
  BucketTask task;
  std::string unfilled;
};

// How hard a pool tries before its bucket is given up: facts rejected per haystack (a corpus
// where most openings repeat cannot hold unique needles, and each rejection costs a pass over
// the pool's text), and haystacks per pool (one may itself hold the facts' text).
size_t RejectionsPerHaystack(const RetrievalTaskOptions& options) { return 4 * options.pool_size; }
constexpr size_t kHaystacksPerPool = 4;
// Spans tried per lexical document before it is left out (a span may be boilerplate).
constexpr size_t kSpansPerDocument = 3;

// Passkey or needle: pools of one haystack each, its copies differing only in their fact. All
// `pools` or none, so that every bucket's rows weigh the same depths.
BuiltTask FactTask(const std::vector<TokenizedText>& corpus, const LengthBucket& bucket,
                   size_t pools, const RetrievalTaskOptions& options, std::mt19937_64& rng) {
  BuiltTask built{
      {bucket.label, static_cast<uint32_t>(bucket.min_tokens), options.kind, options.pool_size},
      ""};
  BucketTask& task = built.task;
  const uint32_t room = FactRoom(options);
  auto [lower, upper] = LengthRange(bucket, room / 2, options);
  if (upper < room || upper - room < lower) return built;
  upper -= room;  // the haystack leaves its fact room inside the bucket
  const uint32_t needle_tokens = 2 * options.query_tokens;
  for (size_t p = 0; p < pools; ++p) {
    const float depth = kFactDepths[p % std::size(kFactDepths)];
    size_t haystacks = 0;
    for (; haystacks < kHaystacksPerPool; ++haystacks) {
      const auto length = static_cast<uint32_t>(lower + rng() % (upper - lower + 1));
      std::vector<bool> used;
      const TokenizedText haystack = Haystack(corpus, rng() % corpus.size(), length, &used);
      if (haystack.byte_spans.empty()) {
        return {{}, absl::StrCat("too little text for a haystack of ", length, " tokens")};
      }
      UniquePool pool(haystack.text);
      std::vector<std::string> documents, queries;
      size_t rejected = 0;
      // A fact joins the pool only if its query stays unique; otherwise it is redrawn.
      auto offer = [&](const std::string& fact, std::string query) {
        std::string document = Insert(haystack, depth, fact);
        if (!pool.TryAdd(document, query)) {
          ++rejected;
          return;
        }
        documents.push_back(std::move(document));
        queries.push_back(std::move(query));
      };
      const size_t limit = RejectionsPerHaystack(options);
      if (options.kind == RetrievalTaskKind::kPasskey) {
        std::vector<uint32_t> keys;  // every key drawn, so none is drawn twice
        while (documents.size() < options.pool_size && rejected <= limit && keys.size() < 90000) {
          const auto key = static_cast<uint32_t>(10000 + rng() % 90000);
          if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
          keys.push_back(key);
          offer(absl::StrCat("The pass key is ", key, ". Remember it. ", key, " is the pass key."),
                absl::StrCat("The pass key is ", key, "."));
        }
      } else {
        // Needles: the openings of documents outside the haystack, from a random place on.
        const size_t first = rng() % corpus.size();
        for (size_t k = 0;
             k < corpus.size() && documents.size() < options.pool_size && rejected <= limit; ++k) {
          const size_t d = (first + k) % corpus.size();
          if (used[d] || corpus[d].byte_spans.size() < needle_tokens) continue;
          offer(Slice(corpus[d], 0, needle_tokens), Slice(corpus[d], 0, options.query_tokens));
        }
      }
      task.redrawn += rejected;
      if (documents.size() < options.pool_size) continue;
      for (size_t c = 0; c < options.pool_size; ++c) {
        task.documents.push_back(std::move(documents[c]));
        task.queries.push_back(std::move(queries[c]));
        task.depths.push_back(depth);
      }
      break;
    }
    task.redrawn += haystacks;  // the haystacks given up on
    if (haystacks == kHaystacksPerPool) {
      return {{},
              absl::StrCat("no pool of ", options.pool_size, " ",
                           options.kind == RetrievalTaskKind::kPasskey ? "keys" : "needles",
                           " whose queries each have one right answer in ", kHaystacksPerPool,
                           " haystacks (", task.redrawn,
                           " draws redrawn); add more distinct "
                           "documents")};
    }
  }
  return built;
}

// Lexical: pools of different documents cut into the bucket, each query a span of its own.
BuiltTask LexicalTask(const std::vector<TokenizedText>& corpus, const LengthBucket& bucket,
                      size_t pools, const RetrievalTaskOptions& options, std::mt19937_64& rng) {
  BuiltTask built{
      {bucket.label, static_cast<uint32_t>(bucket.min_tokens), options.kind, options.pool_size},
      ""};
  BucketTask& task = built.task;
  const auto [lower, upper] = LengthRange(bucket, 2 * options.query_tokens, options);
  if (upper < lower) return built;
  UniquePool pool("");
  size_t long_enough = 0;
  for (const TokenizedText& doc : corpus) {
    if (task.documents.size() >= pools * options.pool_size) break;
    const uint64_t available = std::min<uint64_t>(upper, doc.byte_spans.size());
    if (available < lower) continue;
    ++long_enough;
    const auto length = static_cast<uint32_t>(lower + rng() % (available - lower + 1));
    std::string document = Slice(doc, 0, length);
    for (size_t tries = 0; tries < kSpansPerDocument; ++tries) {
      const auto start = static_cast<uint32_t>(rng() % (length - options.query_tokens + 1));
      std::string query = Slice(doc, start, start + options.query_tokens);
      if (!pool.TryAdd(document, query)) {
        ++task.redrawn;
        continue;
      }
      task.documents.push_back(std::move(document));
      task.queries.push_back(std::move(query));
      task.depths.push_back(static_cast<float>(start) / static_cast<float>(length));
      if (pool.size() == options.pool_size) pool = UniquePool("");
      break;
    }
  }
  const size_t whole = task.pools() * options.pool_size;  // drop a last partial pool
  task.documents.resize(whole);
  task.queries.resize(whole);
  task.depths.resize(whole);
  if (task.pools() < 2) {
    return {{},
            absl::StrCat(long_enough, " documents of at least ", lower, " tokens, ", task.redrawn,
                         " draws redrawn; two pools need ", 2 * options.pool_size,
                         " with unique spans")};
  }
  return built;
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

constexpr NamedValue<RetrievalTaskKind> kTaskNames[] = {{RetrievalTaskKind::kPasskey, "passkey"},
                                                        {RetrievalTaskKind::kNeedle, "needle"},
                                                        {RetrievalTaskKind::kLexical, "lexical"}};

absl::StatusOr<RetrievalTaskKind> ParseRetrievalTaskKind(std::string_view name) {
  if (const auto kind = ValueNamed(kTaskNames, absl::string_view(name.data(), name.size())))
    return *kind;
  return absl::InvalidArgumentError(
      absl::StrCat("--task: '", std::string(name), "' is not one of ", JoinedNames(kTaskNames)));
}

const char* RetrievalTaskKindName(RetrievalTaskKind kind) { return NameOf(kTaskNames, kind); }

size_t DropDuplicateDocuments(std::vector<std::string>* corpus) {
  absl::flat_hash_set<std::string> seen;
  const size_t before = corpus->size();
  corpus->erase(std::remove_if(corpus->begin(), corpus->end(),
                               [&](const std::string& text) {
                                 return !seen.insert(NormalizedText(text)).second;
                               }),
                corpus->end());
  return before - corpus->size();
}

absl::StatusOr<RetrievalTasks> BuildRetrievalTasks(EmbeddingClient& client,
                                                   std::vector<std::string> corpus,
                                                   const RetrievalTaskOptions& options) {
  const size_t duplicates = DropDuplicateDocuments(&corpus);
  std::vector<TokenizedText> docs;
  for (std::string& text : corpus) {
    v1::TokenizeRequest request;
    request.set_model(options.model);
    request.add_inputs(text);
    request.set_add_special_tokens(false);
    auto response = client.Tokenize(request);
    if (!response.ok()) return response.status();
    TokenizedText doc{std::move(text), {}};
    for (const auto& token : response->inputs(0).tokens())
      doc.byte_spans.emplace_back(token.byte_span().start(), token.byte_span().end());
    if (!doc.byte_spans.empty()) docs.push_back(std::move(doc));
  }
  RetrievalTasks tasks = MakeBucketTasks(docs, options);
  tasks.duplicates_dropped = duplicates;
  if (tasks.buckets.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--corpus: too little text for two pools of ", options.pool_size, " ",
        RetrievalTaskKindName(options.kind),
        " documents in any length bucket; add longer or more documents",
        tasks.unfilled.empty() ? ""
                               : absl::StrCat(" (", tasks.unfilled.front().bucket, ": ",
                                              tasks.unfilled.front().reason, ")")));
  }
  return tasks;
}

RetrievalTasks MakeBucketTasks(const std::vector<TokenizedText>& corpus,
                               const RetrievalTaskOptions& options) {
  RetrievalTasks tasks;
  tasks.documents = corpus.size();
  // A pool's pass keys are distinct five-digit numbers: at most 90,000 of them.
  if (corpus.empty() || options.pool_size < 2 || options.pool_size > 90000 ||
      options.query_tokens < 1) {
    return tasks;
  }
  const size_t pools =
      std::max<size_t>(2, (options.queries_per_bucket + options.pool_size - 1) / options.pool_size);
  // std::mt19937_64's output is fixed by the standard (its distributions are not).
  std::mt19937_64 rng(options.seed);
  for (const LengthBucket& bucket : AllLengthBuckets()) {
    BuiltTask built = options.kind == RetrievalTaskKind::kLexical
                          ? LexicalTask(corpus, bucket, pools, options, rng)
                          : FactTask(corpus, bucket, pools, options, rng);
    if (built.task.pools() >= 2) {
      tasks.buckets.push_back(std::move(built.task));
    } else if (!built.unfilled.empty()) {
      tasks.unfilled.push_back({bucket.label, std::move(built.unfilled)});
    }
    if (bucket.label == options.max_bucket) break;
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

absl::StatusOr<std::vector<std::vector<float>>> EmbedInBatches(
    EmbeddingClient& client, const std::vector<std::string>& texts, const EmbedOptions& options,
    const BatchCalls& calls) {
  const size_t batch = std::max<size_t>(1, calls.batch);
  const size_t count = (texts.size() + batch - 1) / batch;
  std::vector<std::vector<std::vector<float>>> results(count);
  std::atomic<size_t> next{0};
  std::mutex mu;
  absl::Status failed;  // guarded by mu
  auto send = [&] {
    for (size_t c = next++; c < count; c = next++) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.ok()) return;
      }
      const std::vector<std::string> slice(texts.begin() + c * batch,
                                           texts.begin() + std::min(texts.size(), (c + 1) * batch));
      std::optional<absl::Duration> deadline;
      if (calls.deadline_for) {
        size_t bytes = 0;
        for (const std::string& text : slice) bytes += text.size();
        deadline = calls.deadline_for(bytes);
      }
      auto response = client.Embed(MakeEmbedRequest(slice, options), deadline);
      std::lock_guard<std::mutex> lock(mu);
      if (!response.ok()) {
        if (failed.ok()) failed = response.status();
        return;
      }
      results[c] = ToVectors(*response);
      if (calls.on_call) calls.on_call();
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(calls.in_flight, count); ++t) threads.emplace_back(send);
  send();
  for (std::thread& t : threads) t.join();
  if (!failed.ok()) return failed;
  std::vector<std::vector<float>> out;
  for (auto& vectors : results)
    for (auto& v : vectors) out.push_back(std::move(v));
  return out;
}

std::vector<double> ReciprocalRanks(const std::vector<std::vector<float>>& queries,
                                    const std::vector<std::vector<float>>& documents,
                                    size_t pool_size) {
  std::vector<double> ranks;
  for (size_t i = 0; i < queries.size(); ++i) {
    const size_t first = i / pool_size * pool_size;
    const size_t last = std::min(documents.size(), first + pool_size);
    const double right = Dot(queries[i], documents[i]);
    size_t rank = 1;
    for (size_t j = first; j < last; ++j)
      if (j != i && Dot(queries[i], documents[j]) >= right) ++rank;
    ranks.push_back(rank <= 10 ? 1.0 / static_cast<double>(rank) : 0.0);
  }
  return ranks;
}

std::string TasksJson(const RetrievalTasks& tasks) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const BucketTask& t : tasks.buckets) {
    const auto counts = QuerySpanCounts(t.documents, t.queries, t.pool_size);
    std::vector<size_t> answers;
    std::vector<uint32_t> answer_counts;
    std::vector<std::vector<uint32_t>> other_counts;
    for (size_t i = 0; i < t.queries.size(); ++i) {
      const size_t own = i % t.pool_size;  // queries[i] finds documents[i]
      answers.push_back(i);
      answer_counts.push_back(counts[i][own]);
      other_counts.push_back(counts[i]);
      other_counts.back().erase(other_counts.back().begin() + static_cast<ptrdiff_t>(own));
    }
    buckets.push_back({{"bucket", t.bucket},
                       {"task", RetrievalTaskKindName(t.kind)},
                       {"pool_size", t.pool_size},
                       {"redrawn", t.redrawn},
                       {"documents", t.documents},
                       {"queries", t.queries},
                       {"depths", t.depths},
                       {"answers", answers},
                       {"answer_counts", answer_counts},
                       {"other_counts", other_counts}});
  }
  nlohmann::json unfilled = nlohmann::json::array();
  for (const UnfilledBucket& u : tasks.unfilled)
    unfilled.push_back({{"bucket", u.bucket}, {"reason", u.reason}});
  return nlohmann::json({{"documents", tasks.documents},
                         {"duplicates_dropped", tasks.duplicates_dropped},
                         {"buckets", buckets},
                         {"unfilled", unfilled}})
             .dump() +
         "\n";
}

std::string FormatTaskSummary(const RetrievalTasks& tasks) {
  size_t redrawn = 0;
  for (const BucketTask& t : tasks.buckets) redrawn += t.redrawn;
  std::string out =
      absl::StrCat("Tasks: ", tasks.documents, " distinct documents (", tasks.duplicates_dropped,
                   " duplicates dropped by normalised text); every query has one "
                   "right answer (",
                   redrawn, " draws redrawn:");
  for (const BucketTask& t : tasks.buckets) absl::StrAppend(&out, " ", t.bucket, " ", t.redrawn);
  out += ")\n";
  for (const UnfilledBucket& u : tasks.unfilled)
    absl::StrAppend(&out, "Bucket ", u.bucket, " cannot be filled: ", u.reason, "\n");
  return out;
}

}  // namespace embedding::client
