// Every error path of the Embed API: its gRPC code and the field named in the message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <functional>
#include <set>
#include <thread>

#include "client/embedding_client.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_models.h"

namespace embedding {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class EmbedErrorsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess(
        {"--model=tiny=" + testing::TinyModelDir(), "--max-inputs-per-request=4",
         "--max-request-bytes=100000", "--max-tokens-per-document=3000"});
    ASSERT_TRUE(server_->ok()) << server_->Log();
    client_ = client::EmbeddingClient::Connect({{server_->grpc_address()}}).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
  }

  // A valid request changed by `edit` must fail with `code` and a message containing all of
  // `fragments`.
  static void ExpectError(const std::function<void(v1::EmbedRequest*)>& edit, absl::StatusCode code,
                          std::vector<std::string> fragments) {
    v1::EmbedRequest request;
    request.add_inputs("a valid input");
    edit(&request);
    auto response = client_->Embed(request);
    ASSERT_EQ(response.status().code(), code) << response.status();
    for (const auto& f : fragments) EXPECT_THAT(response.status().message(), HasSubstr(f));
  }

  static testing::ServerProcess* server_;
  static client::EmbeddingClient* client_;
};
testing::ServerProcess* EmbedErrorsTest::server_ = nullptr;
client::EmbeddingClient* EmbedErrorsTest::client_ = nullptr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST_F(EmbedErrorsTest, NoInputs) {
  ExpectError([](v1::EmbedRequest* r) { r->clear_inputs(); }, kInvalid, {"inputs", "at least one"});
}

TEST_F(EmbedErrorsTest, TooManyInputs) {
  ExpectError(
      [](v1::EmbedRequest* r) {
        for (int i = 0; i < 4; ++i) r->add_inputs("x");
      },
      kInvalid, {"inputs", "[1, 4]", "--max-inputs-per-request"});
}

TEST_F(EmbedErrorsTest, TooManyBytes) {
  ExpectError([](v1::EmbedRequest* r) { r->set_inputs(0, std::string(200000, 'a')); }, kInvalid,
              {"inputs", "100000", "--max-request-bytes"});
}

TEST_F(EmbedErrorsTest, TooManyTokensInOneDocument) {
  std::string doc;
  for (int i = 0; i < 4000; ++i) doc += "cat ";
  ExpectError([&](v1::EmbedRequest* r) { r->add_inputs(doc); }, kInvalid,
              {"inputs[1]", "4000 tokens", "[0, 3000]", "--max-tokens-per-document"});
}

TEST_F(EmbedErrorsTest, InvalidUtf8NamesTheInput) {
  ExpectError(
      [](v1::EmbedRequest* r) {
        r->add_inputs("fine");
        r->add_inputs("bad \xC3\x28");
      },
      kInvalid, {"inputs[2]", "invalid UTF-8 at byte 4"});
}

// The probe saw invalid UTF-8 in `model` and `prompt` answered without the field's name.
TEST_F(EmbedErrorsTest, InvalidUtf8InEveryTextFieldNamesIt) {
  ExpectError([](v1::EmbedRequest* r) { r->set_model("tiny\xFF"); }, kInvalid,
              {"model", "invalid UTF-8 at byte 4"});
  ExpectError([](v1::EmbedRequest* r) { r->set_prompt("query: \xC3"); }, kInvalid,
              {"prompt", "invalid UTF-8 at byte 7"});
  ExpectError([](v1::EmbedRequest* r) { r->set_prompt_name("\xE2\x82"); }, kInvalid,
              {"prompt_name", "invalid UTF-8 at byte 0"});
}

TEST_F(EmbedErrorsTest, TemperatureMustBeFiniteAndInRange) {
  for (float tau : {std::nanf(""), INFINITY, -INFINITY, 0.0f, -1.0f, 0.01f, 4.5f}) {
    ExpectError([&](v1::EmbedRequest* r) { r->set_temperature(tau); }, kInvalid,
                {"temperature", "[0.05, 4]"});
  }
}

TEST_F(EmbedErrorsTest, OverlapMustBeBelowChunkSize) {
  ExpectError(
      [](v1::EmbedRequest* r) {
        r->set_chunk_tokens(100);
        r->set_chunk_overlap_tokens(100);
      },
      kInvalid, {"chunk_overlap_tokens", "less than chunk_tokens", "[0, 99]"});
  ExpectError([](v1::EmbedRequest* r) { r->set_chunk_overlap_tokens(600); }, kInvalid,
              {"chunk_overlap_tokens", "[0, 509]"});
}

TEST_F(EmbedErrorsTest, ChunkTokensWithinTheWindow) {
  ExpectError([](v1::EmbedRequest* r) { r->set_chunk_tokens(511); }, kInvalid,
              {"chunk_tokens", "[1, 510]"});
  ExpectError([](v1::EmbedRequest* r) { r->set_chunk_tokens(0); }, kInvalid,
              {"chunk_tokens", "[1, 510]"});
}

TEST_F(EmbedErrorsTest, DimensionsWithinTheHiddenSize) {
  ExpectError([](v1::EmbedRequest* r) { r->set_dimensions(0); }, kInvalid,
              {"dimensions", "[1, 96]"});
  ExpectError([](v1::EmbedRequest* r) { r->set_dimensions(97); }, kInvalid,
              {"dimensions", "[1, 96]"});
}

TEST_F(EmbedErrorsTest, UnknownEnumValues) {
  ExpectError([](v1::EmbedRequest* r) { r->set_strategy(static_cast<v1::LongTextStrategy>(42)); },
              kInvalid, {"strategy", "42", "0..7"});
  ExpectError(
      [](v1::EmbedRequest* r) { r->set_truncation_side(static_cast<v1::TruncationSide>(9)); },
      kInvalid, {"truncation_side", "9", "0..2"});
}

TEST_F(EmbedErrorsTest, RejectNamesTheDocumentAndTheWindow) {
  std::string doc;
  for (int i = 0; i < 600; ++i) doc += "cat ";
  ExpectError(
      [&](v1::EmbedRequest* r) {
        r->add_inputs(doc);
        r->set_strategy(v1::LONG_TEXT_STRATEGY_REJECT);
      },
      kInvalid,
      {"inputs[1]", "600 tokens", "window of 510", "[0, 510]", "LONG_TEXT_STRATEGY_TRUNCATE"});
}

TEST_F(EmbedErrorsTest, PromptErrors) {
  ExpectError([](v1::EmbedRequest* r) { r->set_prompt_name("nope"); }, kInvalid,
              {"prompt_name", "nope", "passage, query"});
  ExpectError(
      [](v1::EmbedRequest* r) {
        r->set_prompt_name("query");
        r->set_prompt("x: ");
      },
      kInvalid, {"prompt_name", "not both"});
}

TEST_F(EmbedErrorsTest, UnknownModelIsNotFound) {
  ExpectError([](v1::EmbedRequest* r) { r->set_model("gpt-9"); }, absl::StatusCode::kNotFound,
              {"model", "gpt-9", "available: tiny"});
}

TEST_F(EmbedErrorsTest, TokenizeErrors) {
  v1::TokenizeRequest request;
  EXPECT_EQ(client_->Tokenize(request).status().code(), kInvalid);
  request.add_inputs("\xFF");
  auto bad = client_->Tokenize(request);
  EXPECT_EQ(bad.status().code(), kInvalid);
  EXPECT_THAT(bad.status().message(), HasSubstr("inputs[0]"));
  request.set_inputs(0, "fine");
  request.set_model("nope");
  EXPECT_EQ(client_->Tokenize(request).status().code(), absl::StatusCode::kNotFound);
}

// The prompt is prepended to every input, so it counts once per input: 4 empty inputs and a
// 30,000-byte prompt are 120,000 bytes of text against 100,000 (once accepted as 0 bytes).
TEST_F(EmbedErrorsTest, PromptCountsOncePerInputInTheByteBound) {
  ExpectError(
      [](v1::EmbedRequest* r) {
        r->set_inputs(0, "");
        for (int i = 0; i < 3; ++i) r->add_inputs("");
        r->set_prompt(std::string(30000, 'p'));
      },
      kInvalid, {"inputs and prompt: 120000 bytes", "allowed [0, 100000] (--max-request-bytes)"});
}

// Tokenize is bounded like Embed: bytes before tokenising, and the tokens its answer carries
// (one call once grew a server to 2.48 GB and answered 256 MB).
TEST_F(EmbedErrorsTest, TokenizeIsBoundedInBytesAndTokens) {
  v1::TokenizeRequest request;
  request.add_inputs(std::string(100001, 'a'));
  auto bytes = client_->Tokenize(request);
  EXPECT_EQ(bytes.status().code(), kInvalid);
  EXPECT_THAT(bytes.status().message(), HasSubstr("allowed [0, 100000] (--max-request-bytes)"));
  std::string words;
  for (int i = 0; i < 3001; ++i) words += "a ";
  request.set_inputs(0, words);
  auto tokens = client_->Tokenize(request);
  EXPECT_EQ(tokens.status().code(), kInvalid);
  EXPECT_THAT(tokens.status().message(),
              AllOf(HasSubstr("inputs[0]"), HasSubstr("allowed [0, 3000]"),
                    HasSubstr("--max-tokens-per-document")));
  request.set_inputs(0, words.substr(0, 2 * 3000));
  EXPECT_TRUE(client_->Tokenize(request).ok());
}

// 2 million empty inputs are 4 MB on the wire and ~110 MB parsed: counted on the wire first.
TEST_F(EmbedErrorsTest, InputCountIsCheckedOnTheWireBeforeParsing) {
  v1::EmbedRequest request;
  for (int i = 0; i < 2000000; ++i) request.add_inputs("");
  const long before = server_->PeakRssKib();
  auto response = client_->Embed(request);
  ASSERT_EQ(response.status().code(), kInvalid) << response.status();
  EXPECT_THAT(response.status().message(),
              HasSubstr("inputs: more than 4 inputs; allowed [1, 4] (--max-inputs-per-request)"));
  const long grown_mib = (server_->PeakRssKib() - before) / 1024;
  EXPECT_LT(grown_mib, 40) << "peak RSS grew by " << grown_mib << " MiB";
}

// The same for the lists of Rerank and Classify: a rerank's documents, a classify's text pairs.
TEST_F(EmbedErrorsTest, ScoreListsAreCountedOnTheWireBeforeParsing) {
  v1::RerankRequest rerank;
  for (int i = 0; i < 2000000; ++i) rerank.add_documents("");
  const long before = server_->PeakRssKib();
  auto ranked = client_->Rerank(rerank);
  ASSERT_EQ(ranked.status().code(), kInvalid) << ranked.status();
  EXPECT_THAT(ranked.status().message(), HasSubstr("documents: more than 4 inputs; allowed [1, 4]"));
  v1::ClassifyRequest classify;
  classify.add_inputs("one");
  for (int i = 0; i < 2000000; ++i) classify.add_text_pairs("");
  auto classified = client_->Classify(classify);
  ASSERT_EQ(classified.status().code(), kInvalid) << classified.status();
  EXPECT_THAT(classified.status().message(), HasSubstr("text_pairs: more than 4 inputs"));
  const long grown_mib = (server_->PeakRssKib() - before) / 1024;
  EXPECT_LT(grown_mib, 40) << "peak RSS grew by " << grown_mib << " MiB";
}

// A megabyte-long model or prompt name is quoted by its first 512 bytes and its length (whole,
// it once made the error too large for gRPC's metadata).
TEST_F(EmbedErrorsTest, LongNamesAreNotEchoedWhole) {
  const std::string name(1 << 20, 'n');
  for (auto edit : std::vector<std::function<void(v1::EmbedRequest*)>>{
           [&](v1::EmbedRequest* r) { r->set_model(name); },
           [&](v1::EmbedRequest* r) { r->set_prompt_name(name); }}) {
    v1::EmbedRequest request;
    request.add_inputs("text");
    edit(&request);
    auto response = client_->Embed(request);
    EXPECT_NE(response.status().code(), absl::StatusCode::kOk);
    EXPECT_THAT(response.status().message(), HasSubstr("...' (1048576 bytes)"));
    EXPECT_LT(response.status().message().size(), 700u);
  }
}

// Each invalid-UTF-8 request made protobuf write an error line, unthrottled: 200 of them now
// leave a handful, the last saying how many were suppressed.
TEST_F(EmbedErrorsTest, ParseErrorLogLinesAreRateLimited) {
  auto count = [](const std::string& log) {
    size_t n = 0;
    for (size_t at = log.find("invalid UTF-8 data"); at != std::string::npos;
         at = log.find("invalid UTF-8 data", at + 1))
      ++n;
    return n;
  };
  const size_t before = count(server_->Log());
  v1::EmbedRequest request;
  request.add_inputs("bad \xC3 text");
  for (int i = 0; i < 200; ++i) EXPECT_EQ(client_->Embed(request).status().code(), kInvalid);
  absl::SleepFor(absl::Milliseconds(1100));
  EXPECT_EQ(client_->Embed(request).status().code(), kInvalid);  // a new second: one line more
  absl::SleepFor(absl::Milliseconds(200));
  const std::string log = server_->Log();
  EXPECT_LE(count(log) - before, 20u);
  EXPECT_THAT(log, HasSubstr("similar lines suppressed"));
}

TEST_F(EmbedErrorsTest, StreamAnswersEachRequestByIdWithErrorsInBand) {
  auto context = client_->NewContext();
  auto stream = client_->stub().EmbedStream(context.get());
  std::map<std::string, int> expected_code;
  for (int i = 0; i < 6; ++i) {
    v1::EmbedStreamRequest item;
    item.set_request_id("req-" + std::to_string(i));
    item.mutable_request()->add_inputs(std::string(i * 300, 'x') + " cat");
    if (i == 2) item.mutable_request()->set_temperature(-1);
    if (i == 4) item.mutable_request()->set_model("nope");
    if (i == 5) item.mutable_request()->add_inputs("bad \xC3\x28");
    expected_code[item.request_id()] = (i == 2 || i == 5) ? 3 : i == 4 ? 5 : 0;
    ASSERT_TRUE(stream->Write(item));
  }
  stream->WritesDone();
  v1::EmbedStreamResponse response;
  std::map<std::string, int> seen;
  while (stream->Read(&response)) {
    const int code = response.has_error() ? response.error().code() : 0;
    seen[response.request_id()] = code;
    if (response.request_id() == "req-2") {
      EXPECT_THAT(response.error().message(), HasSubstr("temperature"));
    }
    if (response.request_id() == "req-5") {
      EXPECT_THAT(response.error().message(), HasSubstr("inputs[1]: invalid UTF-8 at byte 4"));
    }
    if (!response.has_error()) {
      EXPECT_EQ(response.response().documents_size(), 1);
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(seen, expected_code);
}

TEST_F(EmbedErrorsTest, StreamPastItsOutstandingBoundLosesNothing) {
  // 200 requests written at once: the server stops reading at 64 in flight and resumes as
  // they finish, so every request still gets exactly one answer.
  auto context = client_->NewContext();
  auto stream = client_->stub().EmbedStream(context.get());
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      v1::EmbedStreamRequest item;
      item.set_request_id(std::to_string(i));
      item.mutable_request()->add_inputs("document number " + std::to_string(i));
      if (!stream->Write(item)) break;
    }
    stream->WritesDone();
  });
  std::set<std::string> answered;
  v1::EmbedStreamResponse response;
  while (stream->Read(&response)) {
    EXPECT_FALSE(response.has_error()) << response.error().message();
    EXPECT_TRUE(answered.insert(response.request_id()).second) << "answered twice";
  }
  writer.join();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(answered.size(), 200u);
}

}  // namespace
}  // namespace embedding
