// embedctl: the command line for the embedding service.
//   embedctl embed [texts...]        (or --input=FILE|-, one document per line) -> JSON Lines
//   embedctl tokenize [texts...]
//   embedctl rerank QUERY [documents...] [--top_n=N] [--raw_scores] [--return_chunks]
//   embedctl classify [texts...] [--text_pair=FIRST] [--raw_scores]
//   embedctl models
//   embedctl health                  exit 0 only when SERVING
//   embedctl collapse-report --corpus=FILE --temperatures=1,0.8,0.6 [--json=F] [--chart=F.svg]
//   embedctl calibrate --corpus=FILE|DIR [--schedule-out=MODEL_DIR/tempscale.json] [--json=F]
//                      [--chart=F.svg]
//   embedctl eval --corpus=FILE|DIR [--fixed-temperature=0.7] [--json=F] [--chart=F.svg]
//   embedctl rerank-eval --corpus=FILE|DIR --model=RERANKER [--rerank-temperatures=1,0.9,0.8,0.7]
//   embedctl pull REPO[@REV]... [--hub-cache-dir=DIR] [--hub-offline] [--hub-ca-bundle=PEM]
//   embedctl batch submit FILE [--wait] | status ID | wait ID | download ID [--out_dir=DIR]
//                  (--api_url: the server's --openai-listen)
//   embedctl bench --requests=N|--duration-s=S [--concurrency=C|--rate=R] [--corpus=FILE
//                  [--corpus_in_order]] [--json=F]
// Every flag falls back to EMBEDCTL_<FLAG> (EMBEDCTL_ADDRESS, EMBEDCTL_TIMEOUT_S,
// EMBEDCTL_CA_CERT, EMBEDCTL_TOKEN, ...); the command line wins.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/embedctl/batch_command.h"
#include "client/embedctl/collapse_report.h"
#include "client/embedctl/hub_pull_command.h"
#include "client/embedctl/load_generator.h"
#include "client/embedctl/metrics_probe.h"
#include "client/embedctl/rerank_eval.h"
#include "client/embedctl/retrieval_eval.h"
#include "client/embedctl/score_commands.h"
#include "client/embedctl/tempscale_calibration.h"
#include "client/embedding_client.h"
#include "common/command_line.h"
#include "common/length_buckets.h"
#include "embedding/v1/strategy_names.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, address, "",
          "Server address(es), comma-separated (env EMBEDCTL_ADDRESS; "
          "default 127.0.0.1:50051).");
ABSL_FLAG(double, timeout_s, 0,
          "Per-call deadline in seconds (env EMBEDCTL_TIMEOUT_S; default 60).");
ABSL_FLAG(bool, tls, false, "Use TLS (implied by the certificate flags).");
ABSL_FLAG(std::string, ca_cert, "", "PEM CA bundle for TLS (env EMBEDCTL_CA_CERT).");
ABSL_FLAG(std::string, client_cert, "",
          "PEM client certificate for mTLS (env EMBEDCTL_CLIENT_CERT).");
ABSL_FLAG(std::string, client_key, "", "PEM client key for mTLS (env EMBEDCTL_CLIENT_KEY).");
ABSL_FLAG(std::string, token, "", "Bearer token (env EMBEDCTL_TOKEN).");
ABSL_FLAG(std::string, model, "", "Model name; empty is the server's default.");
ABSL_FLAG(std::string, api_url, "http://127.0.0.1:8000",
          "batch: the server's OpenAI listener (--openai-listen), http://HOST:PORT.");
ABSL_FLAG(std::string, out_dir, ".", "batch download: the folder for the output and error files.");
ABSL_FLAG(bool, wait, false, "batch submit: wait for the batch to end (a progress bar on a terminal).");
ABSL_FLAG(double, poll_s, 1, "batch wait: seconds between two reads of the batch's progress.");
ABSL_FLAG(std::string, temperature, "",
          "Attention temperature tau, or auto (the model's schedule by sequence length); empty "
          "is the model default.");
ABSL_FLAG(std::string, strategy, "",
          "reject|truncate|chunk_mean|chunk_weighted_mean|chunk_max|"
          "chunk_all|late_chunking; empty is the server default.");
ABSL_FLAG(std::string, truncation_side, "", "start|end (TRUNCATE).");
ABSL_FLAG(std::string, chunk_tokens, "", "Tokens per chunk.");
ABSL_FLAG(std::string, chunk_overlap_tokens, "", "Tokens shared by neighbouring chunks.");
ABSL_FLAG(std::string, normalize, "", "true|false; empty is true.");
ABSL_FLAG(std::string, dimensions, "", "Matryoshka dimensions.");
ABSL_FLAG(std::string, prompt_name, "",
          "A prompt of the model (e.g. query). calibrate and eval apply it to queries only, and "
          "without it give queries the model's \"query\" prompt when it has one.");
ABSL_FLAG(std::string, adapter, "",
          "embed, bench: the model's task adapter (EmbedRequest.task: jina-embeddings-v3's "
          "retrieval.query, retrieval.passage, separation, classification, text-matching; "
          "`embedctl models` lists them as tasks=).");
ABSL_FLAG(uint32_t, top_n, 0, "rerank: the best N documents (0: all).");
ABSL_FLAG(bool, raw_scores, false, "rerank, classify: the logits, not the model's scores.");
ABSL_FLAG(bool, return_chunks, false, "rerank, classify: each chunk's scores and spans.");
ABSL_FLAG(std::string, instruction, "",
          "rerank, classify: a prompted reranker's instruction (Qwen3-Reranker's; empty: the "
          "model's default_instruction).");
ABSL_FLAG(std::string, text_pair, "",
          "classify: score each text as the pair (this text, the input).");
ABSL_FLAG(std::string, input, "", "Read documents from FILE (one per line), or - for stdin.");
ABSL_FLAG(std::string, corpus, "", "collapse-report, bench: corpus file, one document per line.");
ABSL_FLAG(std::string, temperatures, "1,0.9,0.8,0.7,0.6", "collapse-report: taus to compare.");
ABSL_FLAG(std::string, rerank_temperatures, "1,0.9,0.8,0.7",
          "rerank-eval: taus to compare (1, the baseline, among them).");
ABSL_FLAG(bool, cut_to_buckets, false, "collapse-report: cut documents to every bucket length.");
ABSL_FLAG(std::string, json, "", "collapse-report: also write the report as JSON here.");
ABSL_FLAG(std::string, chart, "", "collapse-report: write an SVG chart here.");
ABSL_FLAG(uint32_t, compare_chunk_tokens, 0,
          "collapse-report: also embed as the mean of chunks of this many tokens, beside the "
          "native window (0: native only).");
ABSL_FLAG(std::string, schedule_out, "",
          "calibrate: write the fitted schedule here (the model directory's tempscale.json).");
ABSL_FLAG(std::string, state_file, "embedctl-calibrate.state",
          "calibrate: where each bucket and tau's vectors are saved as they complete (empty: "
          "nowhere).");
ABSL_FLAG(bool, resume, false,
          "calibrate: keep the vectors --state-file holds for this run (same model version, "
          "corpus, task and prompt) and embed only the rest.");
ABSL_FLAG(std::string, max_bucket, "",
          "calibrate, eval: the last length bucket to build (e.g. 1024-2047); empty: all.");
ABSL_FLAG(double, min_gain_se, 2,
          "calibrate: standard errors of its paired gain over tau = 1 (calibration half) a tau "
          "below 1 must exceed in its bucket to be chosen.");
ABSL_FLAG(std::string, task, "passkey",
          "calibrate, eval: passkey|needle|lexical (see docs/long-documents.md).");
ABSL_FLAG(uint32_t, docs_per_bucket, 200,
          "calibrate, eval: documents per length bucket, one query each (whole pools).");
ABSL_FLAG(uint32_t, pool_size, 8, "calibrate, eval: candidates each query is ranked among.");
ABSL_FLAG(uint32_t, query_tokens, 12,
          "calibrate, eval: tokens per lexical query span (a needle is twice as long).");
ABSL_FLAG(double, fixed_temperature, 0.7, "eval: the fixed tau column.");
ABSL_FLAG(std::string, compare_strategies,
          "truncate,chunk_mean,chunk_weighted_mean,chunk_max,late_chunking",
          "eval: strategies to compare.");
ABSL_FLAG(std::string, tasks_json, "",
          "calibrate, eval: also write the documents and queries here.");
ABSL_FLAG(std::string, hub_cache_dir, "",
          "pull: the Hugging Face cache (default as the server's: HF_HUB_CACHE, ...).");
ABSL_FLAG(bool, hub_offline, false, "pull: only check the cache (HF_HUB_OFFLINE=1 too).");
ABSL_FLAG(std::string, hub_ca_bundle, "", "pull: PEM trust roots for the Hub's TLS.");
ABSL_FLAG(int64_t, requests, 0, "bench: requests to send (0: bounded by --duration-s).");
ABSL_FLAG(double, duration_s, 0, "bench: seconds to run (0: bounded by --requests).");
ABSL_FLAG(int, concurrency, 1,
          "bench: requests in flight (closed loop); calibrate, eval: calls in flight (at least "
          "one per --address given).");
ABSL_FLAG(double, rate, 0, "bench: requests per second, open loop (overrides --concurrency).");
ABSL_FLAG(int, docs_per_request, 1, "bench: documents per request.");
ABSL_FLAG(double, median_words, 200, "bench: synthetic documents' median length in words.");
ABSL_FLAG(double, sigma, 1.0, "bench: log-normal spread of synthetic lengths.");
ABSL_FLAG(int, max_words, 20000, "bench: longest synthetic document.");
ABSL_FLAG(double, tempscale_share, 0.5, "bench: share of requests with --tempscale-tau.");
ABSL_FLAG(double, tempscale_tau, 0.7, "bench: the tau of those requests.");
ABSL_FLAG(std::string, strategies, "chunk_mean", "bench: strategies to mix, comma-separated.");
ABSL_FLAG(double, deadline_share, 0, "bench: share of requests sent with a tiny deadline.");
ABSL_FLAG(double, injected_deadline_ms, 2, "bench: that deadline.");
ABSL_FLAG(double, cancel_share, 0, "bench: share of requests cancelled after 0-20 ms.");
ABSL_FLAG(uint64_t, seed, 1, "bench: workload seed; calibrate, eval: cut and query seed.");
ABSL_FLAG(bool, corpus_in_order, false,
          "bench: take --corpus documents in file order, cycling (default: at random).");
ABSL_FLAG(std::string, metrics_address, "",
          "bench: the server's --http-listen address; adds its batch fill to the report.");

namespace embedding::client {
namespace {

int Fail(const absl::Status& status) {
  std::cerr << "embedctl: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << "\n";
  return 1;
}

template <typename T>
absl::Status ParseOptional(const std::string& flag, const std::string& text,
                           std::optional<T>* out) {
  if (text.empty()) return absl::OkStatus();
  T value;
  bool ok;
  if constexpr (std::is_same_v<T, float>) {
    ok = absl::SimpleAtof(text, &value);
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = absl::SimpleAtob(text, &value);
  } else {
    ok = absl::SimpleAtoi(text, &value);
  }
  if (!ok)
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": not a valid value"));
  *out = value;
  return absl::OkStatus();
}

absl::StatusOr<EmbedOptions> OptionsFromFlags() {
  EmbedOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.prompt_name = absl::GetFlag(FLAGS_prompt_name);
  options.task = absl::GetFlag(FLAGS_adapter);
  absl::Status s;
  if (const std::string tau = absl::GetFlag(FLAGS_temperature); tau == "auto") {
    options.temperature_mode = v1::TEMPERATURE_MODE_AUTO;
  } else if (!(s = ParseOptional("temperature", tau, &options.temperature)).ok()) {
    return s;
  }
  if (!(s = ParseOptional("chunk_tokens", absl::GetFlag(FLAGS_chunk_tokens), &options.chunk_tokens))
           .ok())
    return s;
  if (!(s = ParseOptional("chunk_overlap_tokens", absl::GetFlag(FLAGS_chunk_overlap_tokens),
                          &options.chunk_overlap_tokens))
           .ok())
    return s;
  if (!(s = ParseOptional("normalize", absl::GetFlag(FLAGS_normalize), &options.normalize)).ok())
    return s;
  if (!(s = ParseOptional("dimensions", absl::GetFlag(FLAGS_dimensions), &options.dimensions)).ok())
    return s;
  const std::string strategy = absl::GetFlag(FLAGS_strategy);
  if (!strategy.empty()) {
    auto parsed = v1::ParseStrategyName(absl::AsciiStrToLower(strategy), "--strategy");
    if (!parsed.ok()) return parsed.status();
    options.strategy = *parsed;
  }
  const std::string side = absl::GetFlag(FLAGS_truncation_side);
  if (side == "start")
    options.truncation_side = v1::TRUNCATION_SIDE_KEEP_START;
  else if (side == "end")
    options.truncation_side = v1::TRUNCATION_SIDE_KEEP_END;
  else if (!side.empty())
    return absl::InvalidArgumentError("--truncation_side: start or end");
  return options;
}

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
    in = &file;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(*in, line);) lines.push_back(line);
  return lines;
}

absl::StatusOr<std::vector<std::string>> Documents(const std::vector<char*>& positional) {
  const std::string input = absl::GetFlag(FLAGS_input);
  if (!input.empty()) return ReadLines(input);
  std::vector<std::string> docs(positional.begin() + 2, positional.end());
  if (docs.empty()) return absl::InvalidArgumentError("no documents: pass texts or --input=FILE|-");
  return docs;
}

int Embed(EmbeddingClient& client, const std::vector<char*>& positional) {
  auto docs = Documents(positional);
  if (!docs.ok()) return Fail(docs.status());
  auto options = OptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  auto response = client.Embed(MakeEmbedRequest(*docs, *options));
  if (!response.ok()) return Fail(response.status());
  for (int i = 0; i < response->documents_size(); ++i) {
    const auto& doc = response->documents(i);
    nlohmann::json line = {
        {"index", i},
        {"model", response->model()},
        {"token_count", doc.token_count()},
        {"chunk_count", doc.chunk_count()},
        {"truncated", doc.truncated()},
        {"temperature", doc.temperature()},
        {"sequence_temperatures", std::vector<float>(doc.sequence_temperatures().begin(),
                                                     doc.sequence_temperatures().end())},
        {"length_bucket", doc.length_bucket()},
        {"high_frequency_ratio", doc.high_frequency_ratio()},
        {"vector", std::vector<float>(doc.vector().begin(), doc.vector().end())}};
    for (const auto& chunk : doc.chunks()) {
      line["chunks"].push_back(
          {{"vector", std::vector<float>(chunk.vector().begin(), chunk.vector().end())},
           {"token_span", {chunk.token_span().start(), chunk.token_span().end()}},
           {"char_span", {chunk.char_span().start(), chunk.char_span().end()}},
           {"temperature", chunk.temperature()}});
    }
    std::cout << line.dump() << "\n";
  }
  return 0;
}

int Tokenize(EmbeddingClient& client, const std::vector<char*>& positional) {
  auto docs = Documents(positional);
  if (!docs.ok()) return Fail(docs.status());
  v1::TokenizeRequest request;
  request.set_model(absl::GetFlag(FLAGS_model));
  for (const auto& d : *docs) request.add_inputs(d);
  auto response = client.Tokenize(request);
  if (!response.ok()) return Fail(response.status());
  for (const auto& input : response->inputs()) {
    nlohmann::json line = nlohmann::json::array();
    for (const auto& t : input.tokens()) {
      line.push_back({{"id", t.id()},
                      {"token", t.text()},
                      {"char_span", {t.char_span().start(), t.char_span().end()}}});
    }
    std::cout << line.dump() << "\n";
  }
  return 0;
}

// rerank's and classify's options from the shared flags and their own.
absl::StatusOr<v1::ScoreOptions> ScoreOptionsFromFlags() {
  auto options = OptionsFromFlags();
  if (!options.ok()) return options.status();
  v1::ScoreOptions score = MakeScoreOptions(*options);
  score.set_raw_scores(absl::GetFlag(FLAGS_raw_scores));
  score.set_return_chunks(absl::GetFlag(FLAGS_return_chunks));
  return score;
}

int Rerank(EmbeddingClient& client, const std::vector<char*>& positional) {
  if (positional.size() < 3) return Fail(absl::InvalidArgumentError("rerank: pass QUERY first"));
  std::vector<char*> rest(positional.begin() + 1, positional.end());  // the query as "command"
  auto docs = Documents(rest);
  if (!docs.ok()) return Fail(docs.status());
  auto options = ScoreOptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  const uint32_t top_n = absl::GetFlag(FLAGS_top_n);
  return RerankCommand(client, absl::GetFlag(FLAGS_model), positional[2], *docs,
                       top_n > 0 ? std::optional<uint32_t>(top_n) : std::nullopt,
                       absl::GetFlag(FLAGS_instruction), *options);
}

int Classify(EmbeddingClient& client, const std::vector<char*>& positional) {
  auto docs = Documents(positional);
  if (!docs.ok()) return Fail(docs.status());
  auto options = ScoreOptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  return ClassifyCommand(client, absl::GetFlag(FLAGS_model), *docs, absl::GetFlag(FLAGS_text_pair),
                         absl::GetFlag(FLAGS_instruction), *options);
}

int Models(EmbeddingClient& client) {
  auto response = client.ListModels();
  if (!response.ok()) return Fail(response.status());
  for (const auto& m : response->models()) {
    // AUTO's schedule as "min_tokens:tau" steps, e.g. "piecewise 0:1,256:0.8".
    std::string schedule = m.tempscale_schedule().form();
    for (int i = 0; i < m.tempscale_schedule().points_size(); ++i) {
      const auto& p = m.tempscale_schedule().points(i);
      absl::StrAppend(&schedule, i == 0 ? " " : ",", p.min_tokens(), ":", p.tau());
    }
    std::printf(
        "%s%s kind=%s version=%s arch=%s dims=%u window=%u pooling=%s dtype=%s tau=%.2f "
        "[%.2f, %.2f] auto=[%s]%s%s%s\n",
        m.name().c_str(), m.name() == response->default_model() ? " (default)" : "",
        m.kind().c_str(), m.version().c_str(), m.architecture().c_str(), m.dimensions(),
        m.max_window_tokens(), m.pooling().c_str(), m.dtype().c_str(), m.default_temperature(),
        m.min_temperature(), m.max_temperature(), schedule.c_str(),
        m.default_instruction().empty()
            ? ""
            : absl::StrCat(" instruction=\"", m.default_instruction(), "\"").c_str(),
        m.tasks().empty() ? "" : absl::StrCat(" tasks=", absl::StrJoin(m.tasks(), ",")).c_str(),
        m.demo() ? " DEMO (vectors not meaningful)" : "");
  }
  return 0;
}

int Health(EmbeddingClient& client) {
  auto serving = client.IsServing();
  if (!serving.ok()) return Fail(serving.status());
  std::cout << (*serving ? "SERVING" : "NOT_SERVING") << "\n";
  return *serving ? 0 : 1;
}

int CollapseReportCommand(EmbeddingClient& client) {
  const std::string corpus_path = absl::GetFlag(FLAGS_corpus);
  if (corpus_path.empty()) return Fail(absl::InvalidArgumentError("--corpus=FILE is required"));
  auto corpus = ReadLines(corpus_path);
  if (!corpus.ok()) return Fail(corpus.status());
  auto embed = OptionsFromFlags();
  if (!embed.ok()) return Fail(embed.status());
  CollapseReportOptions options;
  options.model = embed->model;
  options.strategy = embed->strategy;
  options.cut_to_buckets = absl::GetFlag(FLAGS_cut_to_buckets);
  options.compare_chunk_tokens = absl::GetFlag(FLAGS_compare_chunk_tokens);
  for (absl::string_view t :
       absl::StrSplit(absl::GetFlag(FLAGS_temperatures), ',', absl::SkipEmpty())) {
    float tau;
    if (!absl::SimpleAtof(t, &tau))
      return Fail(absl::InvalidArgumentError("--temperatures: bad value"));
    options.temperatures.push_back(tau);
  }
  const bool tty = isatty(STDERR_FILENO);
  if (tty) {
    options.progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\rembedding: %zu/%zu requests", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  auto report = RunCollapseReport(client, *corpus, options);
  if (!report.ok()) return Fail(report.status());
  std::cout << FormatCollapseTable(*report);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty())
    std::ofstream(path) << CollapseReportJson(*report);
  if (const std::string path = absl::GetFlag(FLAGS_chart); !path.empty())
    std::ofstream(path) << CollapseChartSvg(*report, options.model);
  return 0;
}

absl::StatusOr<std::vector<v1::LongTextStrategy>> StrategyList(const std::string& names) {
  std::vector<v1::LongTextStrategy> out;
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    auto parsed = v1::ParseStrategyName(absl::AsciiStrToLower(name), "--strategies");
    if (!parsed.ok()) return parsed.status();
    out.push_back(*parsed);
  }
  return out;
}

// Progress on a terminal: "label: done/total requests".
std::function<void(size_t, size_t)> ProgressPrinter(const char* label) {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return [label](size_t done, size_t total) {
    std::fprintf(stderr, "\r%s: %zu/%zu requests", label, done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// calibrate and eval: --concurrency, or one call per address given when that is more, so that a
// run against N replicas keeps all N busy.
size_t CallsInFlight() {
  const std::vector<std::string> addresses =
      absl::StrSplit(absl::GetFlag(FLAGS_address), ',', absl::SkipEmpty());
  return std::max<size_t>(
      {1, addresses.size(), static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_concurrency)))});
}

absl::StatusOr<RetrievalTaskOptions> TaskOptionsFromFlags() {
  RetrievalTaskOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  auto kind = ParseRetrievalTaskKind(absl::GetFlag(FLAGS_task));
  if (!kind.ok()) return kind.status();
  options.kind = *kind;
  options.queries_per_bucket = absl::GetFlag(FLAGS_docs_per_bucket);
  options.pool_size = absl::GetFlag(FLAGS_pool_size);
  options.query_tokens = absl::GetFlag(FLAGS_query_tokens);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.max_bucket = absl::GetFlag(FLAGS_max_bucket);
  if (!options.max_bucket.empty()) {
    std::vector<std::string> labels;
    for (const LengthBucket& bucket : AllLengthBuckets()) labels.push_back(bucket.label);
    if (std::find(labels.begin(), labels.end(), options.max_bucket) == labels.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--max-bucket: '", options.max_bucket, "' is not one of ", absl::StrJoin(labels, ", ")));
    }
  }
  if (options.query_tokens < 1 || options.query_tokens > 256)
    return absl::InvalidArgumentError("--query-tokens: must be in [1, 256]");
  if (options.pool_size < 2 || options.pool_size > 1000)
    return absl::InvalidArgumentError("--pool-size: must be in [2, 1000]");
  if (options.queries_per_bucket < 2 * options.pool_size || options.queries_per_bucket > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--docs-per-bucket: must be in [2 x --pool-size = ", 2 * options.pool_size,
                     ", 100000]: a pool for each half"));
  }
  return options;
}

int Calibrate(EmbeddingClient& client) {
  auto corpus = ReadCorpus(absl::GetFlag(FLAGS_corpus));
  if (!corpus.ok()) return Fail(corpus.status());
  auto tasks = TaskOptionsFromFlags();
  if (!tasks.ok()) return Fail(tasks.status());
  auto info = client.GetModelInfo(tasks->model);
  if (!info.ok()) return Fail(info.status());
  CalibrationOptions options;
  options.tasks = *tasks;
  options.tasks.max_tokens = info->max_window_tokens();  // a schedule maps one window's length
  auto prompt = QueryPromptName(*info, absl::GetFlag(FLAGS_prompt_name));
  if (!prompt.ok()) return Fail(prompt.status());
  options.tasks.query_prompt_name = *prompt;
  std::vector<float> grid;
  for (absl::string_view t :
       absl::StrSplit(absl::GetFlag(FLAGS_temperatures), ',', absl::SkipEmpty())) {
    float tau;
    if (!absl::SimpleAtof(t, &tau))
      return Fail(absl::InvalidArgumentError(absl::StrCat("--temperatures: bad value ", t)));
    grid.push_back(tau);
  }
  auto full_grid = CalibrationGrid(grid);
  if (!full_grid.ok()) return Fail(full_grid.status());
  options.grid = *full_grid;
  options.min_gain_se = absl::GetFlag(FLAGS_min_gain_se);
  if (!(options.min_gain_se >= 0))
    return Fail(absl::InvalidArgumentError("--min-gain-se: must be >= 0"));
  options.progress = ProgressPrinter("calibrate");
  options.in_flight = CallsInFlight();
  auto built = BuildRetrievalTasks(client, *std::move(corpus), options.tasks);
  if (!built.ok()) return Fail(built.status());
  std::cerr << FormatTaskSummary(*built);
  const std::vector<BucketTask>& tasks_built = built->buckets;
  const std::string tasks_json = TasksJson(*built);
  if (const std::string path = absl::GetFlag(FLAGS_tasks_json); !path.empty())
    std::ofstream(path) << tasks_json;
  std::optional<CalibrationState> state;
  if (const std::string path = absl::GetFlag(FLAGS_state_file); !path.empty()) {
    auto opened = CalibrationState::Open(
        path,
        CalibrationFingerprint(absl::StrCat(info->name(), "@", info->version()),
                               options.tasks.query_prompt_name, tasks_json),
        absl::GetFlag(FLAGS_resume));
    if (!opened.ok()) return Fail(opened.status());
    state = *std::move(opened);
    options.state = &*state;
  } else if (absl::GetFlag(FLAGS_resume)) {
    return Fail(absl::InvalidArgumentError("--resume: needs a --state-file"));
  }
  auto budget = ProbeCallBudget(client, tasks_built, options.grid, options.state,
                                options.tasks.model, options.batch, client.options().timeout);
  if (!budget.ok()) return Fail(budget.status());
  options.budget = *budget;
  std::cerr << FormatCalibrationPlan(tasks_built, options.grid, *budget, options.state);
  auto calibration = RunCalibration(client, tasks_built, options);
  if (!calibration.ok()) return Fail(calibration.status());
  std::cout << FormatCalibrationTable(*calibration);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty())
    std::ofstream(path) << CalibrationJson(*calibration);
  if (const std::string path = absl::GetFlag(FLAGS_chart); !path.empty())
    std::ofstream(path) << CalibrationChartSvg(*calibration, info->name());
  if (const std::string path = absl::GetFlag(FLAGS_schedule_out); !path.empty()) {
    const std::string source = absl::StrCat(
        "embedctl calibrate --corpus=", absl::GetFlag(FLAGS_corpus), " on ", info->name(), "@",
        info->version(), " (", RetrievalTaskKindName(options.tasks.kind), " MRR@10 among ",
        options.tasks.pool_size, " candidates, ", options.tasks.queries_per_bucket,
        " queries per bucket, grid ", absl::GetFlag(FLAGS_temperatures), ", gains above ",
        options.min_gain_se, " standard errors",
        options.tasks.query_prompt_name.empty()
            ? std::string()
            : absl::StrCat(", queries with prompt '", options.tasks.query_prompt_name, "'"),
        ")");
    std::ofstream out(path);
    out << ScheduleFileJson(*calibration, source);
    if (!out) return Fail(absl::InternalError(absl::StrCat("--schedule-out: cannot write ", path)));
    std::cerr << "wrote " << path << " (a reload of the model picks it up)\n";
  }
  return 0;
}

int Eval(EmbeddingClient& client) {
  auto corpus = ReadCorpus(absl::GetFlag(FLAGS_corpus));
  if (!corpus.ok()) return Fail(corpus.status());
  auto task_options = TaskOptionsFromFlags();
  if (!task_options.ok()) return Fail(task_options.status());
  auto strategies = StrategyList(absl::GetFlag(FLAGS_compare_strategies));
  if (!strategies.ok()) return Fail(strategies.status());
  auto info = client.GetModelInfo(task_options->model);
  if (!info.ok()) return Fail(info.status());
  auto prompt = QueryPromptName(*info, absl::GetFlag(FLAGS_prompt_name));
  if (!prompt.ok()) return Fail(prompt.status());
  EvalOptions options;
  options.tasks = *task_options;
  options.tasks.query_prompt_name = *prompt;
  options.strategies = *strategies;
  options.fixed_tau = static_cast<float>(absl::GetFlag(FLAGS_fixed_temperature));
  options.progress = ProgressPrinter("eval");
  options.in_flight = CallsInFlight();
  auto tasks = BuildRetrievalTasks(client, *std::move(corpus), options.tasks);
  if (!tasks.ok()) return Fail(tasks.status());
  std::cerr << FormatTaskSummary(*tasks);
  if (const std::string path = absl::GetFlag(FLAGS_tasks_json); !path.empty())
    std::ofstream(path) << TasksJson(*tasks);
  auto report = RunEval(client, tasks->buckets, options);
  if (!report.ok()) return Fail(report.status());
  std::cout << FormatEvalTable(*report);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty())
    std::ofstream(path) << EvalJson(*report);
  if (const std::string path = absl::GetFlag(FLAGS_chart); !path.empty())
    std::ofstream(path) << EvalChartSvg(*report, options.tasks.model);
  return 0;
}

// rerank-eval: the reranker's MRR@10 per length bucket at each τ, truncate against chunk_max.
int RerankEval(EmbeddingClient& client) {
  auto corpus = ReadCorpus(absl::GetFlag(FLAGS_corpus));
  if (!corpus.ok()) return Fail(corpus.status());
  auto task_options = TaskOptionsFromFlags();
  if (!task_options.ok()) return Fail(task_options.status());
  RerankEvalOptions options;
  options.model = task_options->model;
  options.taus.clear();
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_rerank_temperatures), ',',
                                               absl::SkipEmpty())) {
    float tau = 0;
    if (!absl::SimpleAtof(text, &tau) || !(tau > 0))
      return Fail(absl::InvalidArgumentError("--rerank-temperatures: positive numbers, e.g. 1,0.8"));
    options.taus.push_back(tau);
  }
  if (std::find(options.taus.begin(), options.taus.end(), 1.0f) == options.taus.end())
    return Fail(absl::InvalidArgumentError("--rerank-temperatures: must include 1, the baseline"));
  options.progress = ProgressPrinter("rerank-eval");
  auto tasks = BuildRetrievalTasks(client, *std::move(corpus), *task_options);
  if (!tasks.ok()) return Fail(tasks.status());
  std::cerr << FormatTaskSummary(*tasks);
  if (const std::string path = absl::GetFlag(FLAGS_tasks_json); !path.empty())
    std::ofstream(path) << TasksJson(*tasks);
  auto report = RunRerankEval(client, tasks->buckets, options);
  if (!report.ok()) return Fail(report.status());
  std::cout << FormatRerankEvalTable(*report);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty())
    std::ofstream(path) << RerankEvalJson(*report);
  return 0;
}

int Bench(EmbeddingClient& client) {
  BenchOptions options;
  options.requests = absl::GetFlag(FLAGS_requests);
  options.duration =
      absl::Milliseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_duration_s) * 1000));
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.documents_per_request = absl::GetFlag(FLAGS_docs_per_request);
  options.median_words = absl::GetFlag(FLAGS_median_words);
  options.sigma = absl::GetFlag(FLAGS_sigma);
  options.max_words = absl::GetFlag(FLAGS_max_words);
  options.tempscale_share = absl::GetFlag(FLAGS_tempscale_share);
  options.tempscale_tau = static_cast<float>(absl::GetFlag(FLAGS_tempscale_tau));
  options.model = absl::GetFlag(FLAGS_model);
  options.task = absl::GetFlag(FLAGS_adapter);
  options.deadline_share = absl::GetFlag(FLAGS_deadline_share);
  options.injected_deadline =
      absl::Microseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_injected_deadline_ms) * 1000));
  options.cancel_share = absl::GetFlag(FLAGS_cancel_share);
  options.seed = absl::GetFlag(FLAGS_seed);
  // --timeout-s is every call's deadline, bench's included (a 131,072-token document takes
  // minutes on a BERT-base-sized model).
  if (const double timeout = absl::GetFlag(FLAGS_timeout_s); timeout > 0)
    options.timeout = absl::Milliseconds(static_cast<int64_t>(timeout * 1000));
  auto strategies = StrategyList(absl::GetFlag(FLAGS_strategies));
  if (!strategies.ok()) return Fail(strategies.status());
  options.strategies = *strategies;
  if (const std::string corpus = absl::GetFlag(FLAGS_corpus); !corpus.empty()) {
    auto lines = ReadLines(corpus);
    if (!lines.ok()) return Fail(lines.status());
    options.corpus = *std::move(lines);
  }
  options.corpus_in_order = absl::GetFlag(FLAGS_corpus_in_order);
  if (isatty(STDERR_FILENO)) {
    options.progress = [](int64_t finished, double seconds) {
      std::fprintf(stderr, "\rbench: %lld requests in %.1f s", static_cast<long long>(finished),
                   seconds);
    };
  }
  const std::string metrics_address = absl::GetFlag(FLAGS_metrics_address);
  const std::vector<std::string> batch_samples = {"embedding_batch_padding_ratio_sum",
                                                  "embedding_batch_padding_ratio_count",
                                                  "embedding_batch_padded_tokens_sum"};
  absl::StatusOr<std::map<std::string, double>> before;
  if (!metrics_address.empty()) before = ScrapeSums(metrics_address, batch_samples);
  auto report = RunBench(client, options);
  if (options.progress) std::fprintf(stderr, "\n");
  if (!report.ok()) return Fail(report.status());
  std::string json = BenchReportJson(*report);
  std::cout << FormatBenchTable(*report);
  if (!metrics_address.empty()) {
    auto after = ScrapeSums(metrics_address, batch_samples);
    if (!before.ok() || !after.ok()) return Fail(before.ok() ? after.status() : before.status());
    const double batches = (*after)["embedding_batch_padding_ratio_count"] -
                           (*before)["embedding_batch_padding_ratio_count"];
    const double padding = batches > 0 ? ((*after)["embedding_batch_padding_ratio_sum"] -
                                          (*before)["embedding_batch_padding_ratio_sum"]) /
                                             batches
                                       : 0;
    const double padded = batches > 0 ? ((*after)["embedding_batch_padded_tokens_sum"] -
                                         (*before)["embedding_batch_padded_tokens_sum"]) /
                                            batches
                                      : 0;
    std::printf("server       %10.0f batches, mean padded tokens %.1f, mean padding share %.4f\n",
                batches, padded, padding);
    auto parsed = nlohmann::json::parse(json);
    parsed["server"] = {
        {"batches", batches}, {"mean_padded_tokens", padded}, {"mean_padding_share", padding}};
    json = parsed.dump(2) + "\n";
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty())
    std::ofstream(path) << json;
  return 0;
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "embedctl embed|tokenize|rerank|classify|models|health|collapse-report|calibrate|eval|"
      "rerank-eval|bench|pull|batch [flags] [texts... | QUERY documents... | repositories... | "
      "submit FILE ...]");
  if (absl::Status env = ApplyEnvironmentFallbacks("EMBEDCTL", "embedctl/embedctl_main.cc");
      !env.ok()) {
    return Fail(env);
  }
  std::vector<std::string> args = UnderscoreFlagNames(argc, argv);
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  if (positional.size() < 2) {
    std::cerr << absl::ProgramUsageMessage() << "\n";
    return 2;
  }
  if (std::string(positional[1]) == "pull") {
    return PullCommand(std::vector<std::string>(positional.begin() + 2, positional.end()),
                       model_store::ResolveHubSettings(absl::GetFlag(FLAGS_hub_cache_dir),
                                                       absl::GetFlag(FLAGS_hub_offline),
                                                       absl::GetFlag(FLAGS_hub_ca_bundle)));
  }
  if (std::string(positional[1]) == "batch") {
    BatchCommandOptions batch;
    batch.api_url = absl::GetFlag(FLAGS_api_url);
    batch.token = absl::GetFlag(FLAGS_token);
    batch.out_dir = absl::GetFlag(FLAGS_out_dir);
    batch.wait = absl::GetFlag(FLAGS_wait);
    batch.poll = absl::Milliseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_poll_s) * 1000));
    return BatchCommand(std::vector<std::string>(positional.begin() + 2, positional.end()), batch);
  }
  ClientOptions connect;
  const std::string address = absl::GetFlag(FLAGS_address);
  connect.addresses =
      absl::StrSplit(address.empty() ? "127.0.0.1:50051" : address, ',', absl::SkipEmpty());
  const double timeout = absl::GetFlag(FLAGS_timeout_s);
  if (timeout > 0) connect.timeout = absl::Milliseconds(static_cast<int64_t>(timeout * 1000));
  connect.tls = absl::GetFlag(FLAGS_tls);
  connect.ca_cert_file = absl::GetFlag(FLAGS_ca_cert);
  connect.client_cert_file = absl::GetFlag(FLAGS_client_cert);
  connect.client_key_file = absl::GetFlag(FLAGS_client_key);
  connect.bearer_token = absl::GetFlag(FLAGS_token);
  auto client = EmbeddingClient::Connect(connect);
  if (!client.ok()) return Fail(client.status());

  const std::string command = positional[1];
  if (command == "embed") return Embed(**client, positional);
  if (command == "tokenize") return Tokenize(**client, positional);
  if (command == "rerank") return Rerank(**client, positional);
  if (command == "classify") return Classify(**client, positional);
  if (command == "models") return Models(**client);
  if (command == "health") return Health(**client);
  if (command == "collapse-report") return CollapseReportCommand(**client);
  if (command == "bench") return Bench(**client);
  if (command == "calibrate") return Calibrate(**client);
  if (command == "eval") return Eval(**client);
  if (command == "rerank-eval") return RerankEval(**client);
  std::cerr << "embedctl: unknown command '" << command << "'\n"
            << absl::ProgramUsageMessage() << "\n";
  return 2;
}

}  // namespace
}  // namespace embedding::client

int main(int argc, char** argv) { return embedding::client::Run(argc, argv); }
