// The retrieval tasks calibrate and eval score on, built from a corpus whose tokens are its
// words, and the statistics they are scored with, each against its definition.
#include "client/embedctl/retrieval_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "client/embedctl/paired_statistics.h"
#include "common/length_buckets.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

// A document whose tokens are its space-separated words.
TokenizedText ByWords(const std::string& text) {
  TokenizedText doc{text, {}};
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    doc.byte_spans.emplace_back(start, end);
    start = end + 1;
  }
  return doc;
}

size_t Words(const std::string& text) {
  return std::vector<std::string>(absl::StrSplit(text, ' ', absl::SkipEmpty())).size();
}

// `documents` documents of 20 to 59 words, every word tagged with its document ("w3d7").
std::vector<TokenizedText> Corpus(int documents) {
  std::mt19937 rng(11);
  std::vector<TokenizedText> corpus;
  for (int d = 0; d < documents; ++d) {
    std::string text;
    const int words = 20 + static_cast<int>(rng() % 40);
    for (int w = 0; w < words; ++w)
      text += (w ? " w" : "w") + std::to_string(w) + "d" + std::to_string(d);
    corpus.push_back(ByWords(text));
  }
  return corpus;
}

const LengthBucket& BucketOf(const std::string& label) {
  for (const LengthBucket& b : AllLengthBuckets())
    if (b.label == label) return b;
  return AllLengthBuckets().front();
}

const LengthBucket& BucketOf(const BucketTask& task) { return BucketOf(task.bucket); }

RetrievalTaskOptions Options(RetrievalTaskKind kind) {
  RetrievalTaskOptions options;
  options.kind = kind;
  options.pool_size = 4;
  options.queries_per_bucket = 12;  // three pools
  options.max_tokens = 510;
  return options;
}

// Passkey: a pool is one haystack whose copies differ only in their key, placed at the pool's
// depth; every document stays inside its bucket and the model's window.
TEST(MakeBucketTasks, PasskeyPoolsShareOneHaystackAndDifferOnlyInTheKey) {
  const auto tasks = MakeBucketTasks(Corpus(60), Options(RetrievalTaskKind::kPasskey)).buckets;
  ASSERT_EQ(tasks.size(), 4u);  // 0-63 to 256-511: the window is 510 tokens
  for (const BucketTask& task : tasks) {
    ASSERT_EQ(task.pools(), 3u) << task.bucket;
    ASSERT_EQ(task.queries.size(), task.documents.size());
    for (size_t p = 0; p < task.pools(); ++p) {
      std::string haystack;
      for (size_t c = 0; c < task.pool_size; ++c) {
        const size_t i = p * task.pool_size + c;
        const std::string& doc = task.documents[i];
        EXPECT_GE(Words(doc), BucketOf(task).min_tokens) << task.bucket;
        EXPECT_LE(Words(doc), std::min<uint64_t>(BucketOf(task).max_tokens, 510)) << task.bucket;
        EXPECT_FLOAT_EQ(task.depths[i], kFactDepths[p]);
        // "The pass key is K." is the query; the fact is "The pass key is K. Remember it. K is
        // the pass key."
        ASSERT_TRUE(absl::StartsWith(task.queries[i], "The pass key is ")) << task.queries[i];
        const std::string key = task.queries[i].substr(16, 5);
        const std::string fact =
            "The pass key is " + key + ". Remember it. " + key + " is the pass key.";
        const size_t at = doc.find(fact);
        ASSERT_NE(at, std::string::npos) << doc;
        if (p == 0) {
          EXPECT_EQ(at, 0u);  // depth 0: first
        }
        const std::string rest = doc.substr(0, at) + doc.substr(at + fact.size());
        if (c == 0) haystack = rest;
        EXPECT_EQ(rest, haystack) << "pool " << p;
        for (size_t other = 0; other < c; ++other)
          EXPECT_NE(task.queries[p * task.pool_size + other], task.queries[i]);
      }
    }
  }
  // Deterministic for a seed; another seed draws other haystacks and keys.
  const auto again = MakeBucketTasks(Corpus(60), Options(RetrievalTaskKind::kPasskey)).buckets;
  EXPECT_EQ(again[2].documents, tasks[2].documents);
  RetrievalTaskOptions reseeded = Options(RetrievalTaskKind::kPasskey);
  reseeded.seed = 2;
  EXPECT_NE(MakeBucketTasks(Corpus(60), reseeded).buckets[2].documents, tasks[2].documents);
}

// Needle: the needle is the opening of a document outside the haystack, the query its first
// half; the copies of a pool differ only in their needle.
TEST(MakeBucketTasks, NeedlesComeFromOutsideTheHaystackAndQueriesAreTheirFirstHalf) {
  const auto corpus = Corpus(60);
  const auto tasks = MakeBucketTasks(corpus, Options(RetrievalTaskKind::kNeedle)).buckets;
  ASSERT_EQ(tasks.size(), 4u);
  for (const BucketTask& task : tasks) {
    for (size_t i = 0; i < task.documents.size(); ++i) {
      const std::string& query = task.queries[i];
      EXPECT_EQ(Words(query), 12u);
      // The query names its source document through its tags; the needle is that document's
      // first 24 words, and no other word of that document is in the haystack.
      const std::string source = query.substr(query.find('d'), query.find(' ') - query.find('d'));
      const TokenizedText* needle_doc = nullptr;
      for (const auto& doc : corpus)
        if (absl::StartsWith(doc.text, query)) needle_doc = &doc;
      ASSERT_NE(needle_doc, nullptr) << query;
      const std::string needle = needle_doc->text.substr(0, needle_doc->byte_spans[23].second);
      const size_t at = task.documents[i].find(needle);
      ASSERT_NE(at, std::string::npos);
      const std::string rest =
          task.documents[i].substr(0, at) + task.documents[i].substr(at + needle.size());
      EXPECT_FALSE(absl::StrContains(rest + " ", source + " ")) << source;
      const size_t first = i / task.pool_size * task.pool_size;
      if (i > first) {
        const std::string& other = task.documents[first];
        const std::string& other_query = task.queries[first];
        EXPECT_NE(other_query, query);
        EXPECT_EQ(Words(rest), Words(other) - 24);
      }
    }
  }
}

// Lexical: pools of different documents, each query a span copied from its own document.
TEST(MakeBucketTasks, LexicalQueriesAreSpansOfTheirOwnDocument) {
  const auto tasks = MakeBucketTasks(Corpus(60), Options(RetrievalTaskKind::kLexical)).buckets;
  ASSERT_EQ(tasks.size(), 1u);  // documents of 20-59 words fill only the 0-63 bucket
  const BucketTask& task = tasks[0];
  EXPECT_EQ(task.bucket, "0-63");
  EXPECT_EQ(task.documents.size(), 12u);
  for (size_t i = 0; i < task.documents.size(); ++i) {
    EXPECT_TRUE(absl::StrContains(task.documents[i], task.queries[i]));
    EXPECT_EQ(Words(task.queries[i]), 12u);
    EXPECT_GE(Words(task.documents[i]), 24u);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(task.documents[i], task.documents[j]);
  }
}

// A bucket gets two pools or none: 40 short documents hold about 1,600 words, too few for the
// 2,048-token bucket's haystacks; lexical needs two pools of long enough documents.
TEST(MakeBucketTasks, ABucketWithoutTwoPoolsIsLeftOut) {
  RetrievalTaskOptions options = Options(RetrievalTaskKind::kPasskey);
  options.max_tokens = 0;
  const RetrievalTasks tasks = MakeBucketTasks(Corpus(40), options);
  ASSERT_FALSE(tasks.buckets.empty());
  EXPECT_LT(BucketOf(tasks.buckets.back()).max_tokens, 2048u);
  // Every bucket past it says why, and none beyond its reach is listed: the first unfilled one
  // follows the last filled one.
  ASSERT_FALSE(tasks.unfilled.empty());
  EXPECT_EQ(BucketOf(tasks.unfilled.front().bucket).min_tokens,
            BucketOf(tasks.buckets.back()).max_tokens + 1);
  EXPECT_THAT(tasks.unfilled.front().reason,
              ::testing::StartsWith("too little text for a haystack of "));
  RetrievalTaskOptions lexical = Options(RetrievalTaskKind::kLexical);
  const auto seven = Corpus(7);  // at most one pool of 4
  const RetrievalTasks few = MakeBucketTasks(seven, lexical);
  EXPECT_TRUE(few.buckets.empty());
  ASSERT_EQ(few.unfilled.size(), 4u);  // every bucket of the 510-token window
  size_t long_enough = 0;
  for (const TokenizedText& doc : seven) long_enough += doc.byte_spans.size() >= 24;
  EXPECT_EQ(few.unfilled[0].bucket, "0-63");
  EXPECT_EQ(few.unfilled[0].reason,
            std::to_string(long_enough) +
                " documents of at least 24 tokens, 0 draws redrawn; two pools need 8 with unique "
                "spans");
  EXPECT_EQ(few.unfilled[3].reason,
            "0 documents of at least 256 tokens, 0 draws redrawn; two pools need 8 with unique "
            "spans");
}

// A corpus built to break uniqueness, as catalogues of error messages, logs and FAQs do: every
// third document is an exact copy of the one before, an entry opening with the same 12 words
// as its siblings, or a fragment of another document (so the haystack may hold a needle's
// text). Every task of every kind still gives each query exactly one candidate holding its
// text, candidates are pairwise distinct, and the rejected draws are counted. Checked on the
// raw text: the corpus is lower-case ASCII with single spaces, so plain search is exact here.
std::vector<TokenizedText> HostileCorpus() {
  const auto base = Corpus(60);
  const std::string opening = "error e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11";  // 12 words
  std::vector<TokenizedText> corpus;
  for (size_t d = 0; d < base.size(); ++d) {
    corpus.push_back(base[d]);
    if (d % 3 == 0) corpus.push_back(base[d]);
    if (d % 3 == 1) corpus.push_back(ByWords(opening + " " + base[d].text));
    if (d % 3 == 2) {
      const TokenizedText& whole = base[(d + 30) % base.size()];  // words 2 to 31 at most
      const size_t last = std::min<size_t>(whole.byte_spans.size(), 32) - 1;
      corpus.push_back(ByWords(whole.text.substr(
          whole.byte_spans[2].first, whole.byte_spans[last].second - whole.byte_spans[2].first)));
    }
  }
  return corpus;
}

size_t Count(const std::string& text, const std::string& span) {
  size_t count = 0;
  for (size_t at = text.find(span); at != std::string::npos; at = text.find(span, at + 1)) ++count;
  return count;
}

TEST(MakeBucketTasks, EveryQueryOfAHostileCorpusHasExactlyOneAnswer) {
  const auto corpus = HostileCorpus();
  for (RetrievalTaskKind kind :
       {RetrievalTaskKind::kPasskey, RetrievalTaskKind::kNeedle, RetrievalTaskKind::kLexical}) {
    RetrievalTaskOptions options = Options(kind);
    options.queries_per_bucket = 40;  // ten pools: many draws meet the hostile documents
    const RetrievalTasks tasks = MakeBucketTasks(corpus, options);
    ASSERT_FALSE(tasks.buckets.empty()) << RetrievalTaskKindName(kind);
    size_t redrawn = 0;
    for (const BucketTask& task : tasks.buckets) {
      redrawn += task.redrawn;
      if (kind != RetrievalTaskKind::kLexical) {
        ASSERT_EQ(task.pools(), 10u) << task.bucket;
      }
      for (size_t i = 0; i < task.queries.size(); ++i) {
        const size_t first = i / task.pool_size * task.pool_size;
        EXPECT_GE(Count(task.documents[i], task.queries[i]), 1u) << task.queries[i];
        for (size_t j = first; j < first + task.pool_size; ++j) {
          if (j == i) continue;
          EXPECT_EQ(Count(task.documents[j], task.queries[i]), 0u)
              << RetrievalTaskKindName(kind) << " " << task.bucket << ": '" << task.queries[i]
              << "' is also in candidate " << j;
          EXPECT_NE(task.documents[j], task.documents[i]);
        }
      }
    }
    // Needles meet the copies, shared openings and fragments; passkey haystacks never hold a
    // pass key's sentence, so nothing there is redrawn.
    if (kind == RetrievalTaskKind::kNeedle) {
      EXPECT_GT(redrawn, 0u);
    }
    if (kind == RetrievalTaskKind::kPasskey) {
      EXPECT_EQ(redrawn, 0u);
    }
  }
}

// When the corpus cannot give a pool unique needles (every document opens the same way), the
// bucket says so instead of holding queries with several answers.
TEST(MakeBucketTasks, ABucketWhoseNeedlesCannotBeUniqueSaysSo) {
  std::vector<TokenizedText> corpus;
  for (const TokenizedText& doc : Corpus(60))
    corpus.push_back(
        ByWords("one opening shared by all twelve words of every entry right here " + doc.text));
  const RetrievalTasks tasks = MakeBucketTasks(corpus, Options(RetrievalTaskKind::kNeedle));
  EXPECT_TRUE(tasks.buckets.empty());
  ASSERT_FALSE(tasks.unfilled.empty());
  EXPECT_EQ(tasks.unfilled[0].bucket, "0-63");
  EXPECT_THAT(tasks.unfilled[0].reason,
              ::testing::AllOf(
                  ::testing::StartsWith("no pool of 4 needles whose queries each have one right "
                                        "answer in 4 haystacks ("),
                  ::testing::EndsWith(" draws redrawn); add more distinct documents")));
}

TEST(DropDuplicateDocuments, KeepsTheFirstOfEachNormalisedText) {
  std::vector<std::string> corpus = {"Error: disk full", "error:  DISK full ", "Error: disk fuller",
                                     "Error: disk full", "Error : disk full"};
  EXPECT_EQ(DropDuplicateDocuments(&corpus), 3u);
  EXPECT_THAT(corpus, ::testing::ElementsAre("Error: disk full", "Error: disk fuller"));
}

// The tasks file carries each query's answer and the proof that it is the only one.
TEST(TasksJson, CarriesEachAnswerAndTheOtherCandidatesZeroCounts) {
  RetrievalTaskOptions options = Options(RetrievalTaskKind::kNeedle);
  RetrievalTasks tasks = MakeBucketTasks(HostileCorpus(), options);
  tasks.duplicates_dropped = 3;
  const auto json = nlohmann::json::parse(TasksJson(tasks));
  EXPECT_EQ(json["duplicates_dropped"], 3);
  EXPECT_EQ(json["documents"], HostileCorpus().size());
  ASSERT_EQ(json["buckets"].size(), tasks.buckets.size());
  for (size_t b = 0; b < tasks.buckets.size(); ++b) {
    const auto& bucket = json["buckets"][b];
    EXPECT_EQ(bucket["redrawn"], tasks.buckets[b].redrawn);
    for (size_t i = 0; i < tasks.buckets[b].queries.size(); ++i) {
      EXPECT_EQ(bucket["answers"][i], i);
      EXPECT_EQ(bucket["answer_counts"][i],
                Count(tasks.buckets[b].documents[i], tasks.buckets[b].queries[i]));
      EXPECT_EQ(bucket["other_counts"][i], std::vector<int>(options.pool_size - 1, 0));
    }
  }
}

TEST(RetrievalTaskKind, ParsesItsNamesAndRefusesOthersNamingTheFlag) {
  EXPECT_EQ(ParseRetrievalTaskKind("needle").value(), RetrievalTaskKind::kNeedle);
  EXPECT_STREQ(RetrievalTaskKindName(RetrievalTaskKind::kLexical), "lexical");
  const auto bad = ParseRetrievalTaskKind("haystack");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--task: 'haystack' is not one of passkey, needle, lexical");
}

// Ranks count only the query's own pool; a tie ranks the right document last; below 10 is 0.
TEST(ReciprocalRanks, RankEachQueryAmongItsOwnPool) {
  const std::vector<std::vector<float>> docs = {{1, 0}, {0.8f, 0.6f}, {0, 1}, {0.6f, 0.8f}};
  const std::vector<std::vector<float>> queries = {{0, 1}, {0, 1}, {1, 0}, {0.6f, 0.8f}};
  // Query 0 prefers doc 1 (0.6 > 0): rank 2. Query 1: its own doc wins. Query 2 (pool 2..3)
  // prefers doc 3 (0.6 > 0), but not doc 0 of the other pool: rank 2. Query 3 ties with
  // nothing higher: rank 1.
  EXPECT_THAT(ReciprocalRanks(queries, docs, 2), ::testing::ElementsAre(0.5, 1.0, 0.5, 1.0));
  // A tie ranks it last: both pool documents score 0 for this query.
  EXPECT_THAT(ReciprocalRanks({{0, 0}, {0, 0}}, {{1, 0}, {0, 1}}, 2),
              ::testing::ElementsAre(0.5, 0.5));
  std::vector<std::vector<float>> far(12, {1, 0});
  far[0] = {0, 1};  // eleven documents score higher than the right one: rank 12
  EXPECT_EQ(ReciprocalRanks({{1, 0}}, far, 12)[0], 0.0);
}

// Against the definition: the mean of the differences and their sample standard deviation over
// the square root of their count.
TEST(ComparePaired, GivesTheMeanDifferenceAndItsStandardError) {
  const std::vector<double> candidate = {1, 0.5, 1, 0.5, 0.2}, baseline = {0.5, 0.5, 0.5, 0.5, 1};
  const PairedGain all = ComparePaired(candidate, baseline, {0, 1, 2, 3});
  EXPECT_EQ(all.queries, 4u);
  EXPECT_DOUBLE_EQ(all.mean, 0.25);
  EXPECT_NEAR(all.standard_error, std::sqrt(4 * 0.25 * 0.25 / 3) / 2, 1e-15);
  EXPECT_TRUE(all.Significant(1));
  EXPECT_FALSE(all.Significant(2));  // 0.25 < 2 x 0.144
  const PairedGain same = ComparePaired(candidate, baseline, {0, 2});
  EXPECT_DOUBLE_EQ(same.standard_error, 0);
  EXPECT_TRUE(same.Significant(2));
  EXPECT_FALSE(ComparePaired(candidate, baseline, {0}).Significant(0));     // one query
  EXPECT_FALSE(ComparePaired(candidate, baseline, {4, 1}).Significant(0));  // a loss
  EXPECT_DOUBLE_EQ(MeanOver(candidate, {1, 4}), 0.35);
  EXPECT_EQ(MeanOver(candidate, {}), 0);
}

}  // namespace
}  // namespace embedding::client
