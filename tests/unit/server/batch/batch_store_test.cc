// The Batch API's store on a real folder: records read back after a reopen (a restart), a
// torn result line cut, results published once, bounds refused naming their flag, expiry.
#include "server/batch/batch_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

namespace embedding::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class BatchStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.dir = (std::filesystem::path(::testing::TempDir()) /
                    ::testing::UnitTest::GetInstance()->current_test_info()->name())
                       .string();
    std::filesystem::remove_all(options_.dir);
  }
  std::unique_ptr<BatchStore> Open() {
    auto store = BatchStore::Open(options_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  nlohmann::json Create(BatchStore& store, const std::string& file_id) {
    auto batch = store.CreateBatch({{"input_file_id", file_id},
                                    {"endpoint", "/v1/embeddings"},
                                    {"completion_window", "24h"}});
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *batch : nlohmann::json();
  }
  BatchStoreOptions options_;
};

TEST_F(BatchStoreTest, RecordsAndResultsSurviveAReopenAndATornLineIsCut) {
  std::string batch_id, file_id;
  {
    auto store = Open();
    auto file = store->AddFile("in.jsonl", "batch", "{}\n{}\n");
    ASSERT_TRUE(file.ok()) << file.status();
    file_id = (*file)["id"];
    EXPECT_EQ((*file)["bytes"], 6);
    batch_id = Create(*store, file_id)["id"];
    ASSERT_TRUE(store->AppendResult(batch_id, ResultFile::kOutput, "{\"line\":0}").ok());
  }
  // A crash in the middle of the next append leaves a part of a line, and a temporary file.
  const std::string output = options_.dir + "/batches/" + batch_id + ".output.jsonl";
  std::ofstream(output, std::ios::app) << "{\"line\":1";
  std::ofstream(options_.dir + "/batches/x.json.tmp") << "{";
  auto store = Open();
  EXPECT_EQ((*store->File(file_id))["filename"], "in.jsonl");
  EXPECT_EQ(*store->FileContent(file_id), "{}\n{}\n");
  EXPECT_EQ((*store->Batch(batch_id))["status"], "validating");
  EXPECT_EQ(store->NextActiveBatch(), batch_id);
  EXPECT_FALSE(std::filesystem::exists(options_.dir + "/batches/x.json.tmp"));
  auto lines = store->ReadResults(batch_id, ResultFile::kOutput);
  ASSERT_TRUE(lines.ok());
  EXPECT_THAT(*lines, ::testing::ElementsAre("{\"line\":0}"));
  EXPECT_EQ(std::filesystem::file_size(output), 11u);  // the torn part is gone from the file
}

TEST_F(BatchStoreTest, PublishIsIdempotentAndEmptyResultsGiveNull) {
  auto store = Open();
  const std::string file_id = (*store->AddFile("in.jsonl", "batch", "{}\n"))["id"];
  const std::string batch_id = Create(*store, file_id)["id"];
  ASSERT_TRUE(store->AppendResult(batch_id, ResultFile::kOutput, "{\"a\":1}").ok());
  auto first = store->PublishResults(batch_id, ResultFile::kOutput);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)["purpose"], "batch_output");
  EXPECT_EQ((*first)["bytes"], 8);
  auto again = store->PublishResults(batch_id, ResultFile::kOutput);
  EXPECT_EQ((*again)["id"], (*first)["id"]);
  EXPECT_EQ(*store->FileContent((*first)["id"]), "{\"a\":1}\n");
  // A crash after publishing, before the batch's last update: its results read back from the
  // published File, so no line runs twice.
  EXPECT_THAT(*store->ReadResults(batch_id, ResultFile::kOutput),
              ::testing::ElementsAre("{\"a\":1}"));
  EXPECT_TRUE(store->PublishResults(batch_id, ResultFile::kErrors)->is_null());
}

TEST_F(BatchStoreTest, BoundsNameTheirFlag) {
  options_.max_file_bytes = 10;
  options_.max_lines = 2;
  options_.max_stored_bytes = 15;
  options_.max_active = 1;
  auto store = Open();
  auto refused = [](const absl::StatusOr<nlohmann::json>& r, absl::StatusCode code,
                    const std::string& start, const std::string& flag) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code);
    EXPECT_THAT(std::string(r.status().message()), StartsWith(start));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(flag));
  };
  refused(store->AddFile("f", "fine-tune", "{}"), absl::StatusCode::kInvalidArgument,
          "purpose:", "\"batch\"");
  refused(store->AddFile("f", "batch", ""), absl::StatusCode::kInvalidArgument, "file:", "empty");
  refused(store->AddFile("f", "batch", "12345678901"), absl::StatusCode::kInvalidArgument,
          "file:", "--batch-max-file-bytes=10");
  refused(store->AddFile("f", "batch", "1\n2\n3"), absl::StatusCode::kInvalidArgument, "file:",
          "--batch-max-lines=2");
  const std::string id = (*store->AddFile("f", "batch", "1234567890"))["id"];
  refused(store->AddFile("f", "batch", "123456"), absl::StatusCode::kResourceExhausted, "file:",
          "--batch-max-stored-bytes=15");
  Create(*store, id);
  refused(store->CreateBatch({{"input_file_id", id},
                              {"endpoint", "/v1/embeddings"},
                              {"completion_window", "24h"}}),
          absl::StatusCode::kResourceExhausted, "batch:", "--batch-max-active=1");
  refused(store->DeleteFile(id), absl::StatusCode::kInvalidArgument, "file_id:", "running");
}

// Ids made within one millisecond still sort in the order they were made (this test's two
// batches once did not, when the random digits decided).
TEST_F(BatchStoreTest, IdsSortInCreationOrderWithinOneMillisecond) {
  auto store = Open();
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back((*store->AddFile("f", "batch", "{}\n"))["id"]);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
}

TEST_F(BatchStoreTest, CancelTurnsARunningBatchCancellingAndLeavesAnEndedOne) {
  auto store = Open();
  const std::string file_id = (*store->AddFile("in.jsonl", "batch", "{}\n"))["id"];
  const std::string older = Create(*store, file_id)["id"];
  const std::string batch_id = Create(*store, file_id)["id"];
  EXPECT_EQ(store->NextActiveBatch(), older);
  auto cancelled = store->CancelBatch(batch_id);
  EXPECT_EQ(store->NextActiveBatch(), batch_id);  // a cancelled batch ends before others run
  EXPECT_EQ((*cancelled)["status"], "cancelling");
  EXPECT_TRUE((*cancelled)["cancelling_at"].is_number());
  ASSERT_TRUE(store->UpdateBatch(batch_id, [](nlohmann::json& b) { b["status"] = "cancelled"; })
                  .ok());
  EXPECT_EQ((*store->CancelBatch(batch_id))["status"], "cancelled");
  EXPECT_EQ(store->NextActiveBatch(), older);
  EXPECT_EQ(store->CancelBatch("batch_nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(BatchStoreTest, ExpiryRemovesOldFilesButNotARunningBatchsInput) {
  options_.retention = absl::Hours(1);
  auto store = Open();
  const std::string running = (*store->AddFile("a", "batch", "{}\n"))["id"];
  const std::string idle = (*store->AddFile("b", "batch", "{}\n"))["id"];
  Create(*store, running);
  store->Expire(absl::Now() + absl::Hours(2));
  EXPECT_TRUE(store->File(running).ok());
  EXPECT_EQ(store->File(idle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(options_.dir + "/files/" + idle + ".jsonl"));
  // The freed bytes count again.
  EXPECT_EQ(store->Files().size(), 1u);
}

}  // namespace
}  // namespace embedding::server
