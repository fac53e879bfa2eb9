#include "server/batch/batch_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace embedding::server {
namespace {

namespace fs = std::filesystem;

int64_t Seconds(absl::Time t) { return absl::ToUnixSeconds(t); }

std::string RandomHex(size_t digits);

// An id's 24 hex digits: the creation time in milliseconds, then random ones, so ids sort in
// creation order (created_at has whole seconds only). Two ids made in one millisecond would
// sort by their random digits, so the time part is kept strictly increasing in a process.
std::string NewIdDigits() {
  static std::mutex mu;
  static int64_t last_millis = 0;
  int64_t millis;
  {
    std::lock_guard<std::mutex> lock(mu);
    millis = last_millis = std::max(absl::ToUnixMillis(absl::Now()), last_millis + 1);
  }
  return absl::StrCat(absl::Hex(millis, absl::kZeroPad12), RandomHex(12));
}

std::string RandomHex(size_t digits) {
  static absl::BitGen* bits = new absl::BitGen();  // absl::BitGen is not thread-safe
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::string hex;
  while (hex.size() < digits) absl::StrAppendFormat(&hex, "%016x", absl::Uniform<uint64_t>(*bits));
  return hex.substr(0, digits);
}

absl::Status IoError(const std::string& path, const char* what) {
  return absl::InternalError(absl::StrCat("--batch-dir: cannot ", what, " ", path, ": ",
                                          std::strerror(errno)));
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path, "write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return IoError(dir, "open");
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : IoError(dir, "fsync");
}

// Temporary file, fsync, rename over `path`, fsync of its folder: a reader finds the old
// content or the new, never a part.
absl::Status WriteAtomically(const std::string& path, absl::string_view content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp, "create");
  absl::Status written = WriteAll(fd, content, tmp);
  if (written.ok() && ::fsync(fd) != 0) written = IoError(tmp, "fsync");
  ::close(fd);
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) written = IoError(path, "rename");
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  return SyncDir(fs::path(path).parent_path().string());
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path, "read");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Every "<id>.json" record of `dir`; temporary files left by a crash are removed.
absl::StatusOr<std::map<std::string, nlohmann::json>> ReadRecords(const std::string& dir) {
  std::map<std::string, nlohmann::json> records;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, ".tmp")) {
      fs::remove(entry.path(), ec);
      continue;
    }
    if (!absl::EndsWith(name, ".json")) continue;
    ASSIGN_OR_RETURN(std::string text, ReadWhole(entry.path().string()));
    nlohmann::json record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.value("id", nlohmann::json()).is_string() ||
        !record.value("created_at", nlohmann::json()).is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--batch-dir: ", entry.path().string(), " is not a record of this server"));
    }
    const std::string id = record["id"];  // before the move: json's operator= takes by value
    records[id] = std::move(record);
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--batch-dir: cannot read ", dir));
  return records;
}

std::vector<nlohmann::json> NewestFirst(const std::map<std::string, nlohmann::json>& records) {
  std::vector<nlohmann::json> list;
  for (const auto& [id, record] : records) list.push_back(record);
  std::reverse(list.begin(), list.end());  // the map's order is the ids', creation order
  return list;
}

// OpenAI's File object, written now and kept for `retention`.
nlohmann::json FileObject(const std::string& id, int64_t bytes, const std::string& filename,
                          const char* purpose, absl::Duration retention) {
  const absl::Time now = absl::Now();
  return {{"id", id},
          {"object", "file"},
          {"bytes", bytes},
          {"created_at", Seconds(now)},
          {"expires_at", Seconds(now + retention)},
          {"filename", filename},
          {"purpose", purpose},
          {"status", "processed"},
          {"status_details", nullptr}};
}

absl::Status FileNotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("file_id: no file ", id.substr(0, 64)));
}
absl::Status BatchNotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("batch_id: no batch ", id.substr(0, 64)));
}

// completion_window "<N>h" with N in [1, 720]: the batch expires that long after creation.
absl::StatusOr<absl::Duration> CompletionWindow(const nlohmann::json& value) {
  int hours = 0;
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  if (!absl::EndsWith(text, "h") ||
      !absl::SimpleAtoi(absl::string_view(text).substr(0, text.size() - 1), &hours) ||
      hours < 1 || hours > 720) {
    return absl::InvalidArgumentError(
        "completion_window: must be a number of hours from \"1h\" to \"720h\" (OpenAI's is "
        "\"24h\")");
  }
  return absl::Hours(hours);
}

absl::Status CheckMetadata(const nlohmann::json& metadata) {
  if (metadata.is_null()) return absl::OkStatus();
  bool ok = metadata.is_object() && metadata.size() <= 16;
  for (auto it = metadata.begin(); ok && it != metadata.end(); ++it)
    ok = it.key().size() <= 64 && it->is_string() && it->get<std::string>().size() <= 512;
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "metadata: must be an object of at most 16 string values (keys up to 64 characters, "
      "values up to 512)");
}

}  // namespace

bool BatchIsActive(const nlohmann::json& batch) {
  const std::string status = batch.value("status", "");
  return status == "validating" || status == "in_progress" || status == "finalizing" ||
         status == "cancelling";
}

absl::StatusOr<std::unique_ptr<BatchStore>> BatchStore::Open(BatchStoreOptions options) {
  std::unique_ptr<BatchStore> store(new BatchStore(std::move(options)));
  std::error_code ec;
  for (const std::string& dir : {store->FilesDir(), store->BatchesDir()}) {
    fs::create_directories(dir, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--batch-dir: cannot create ", dir, ": ", ec.message()));
    }
  }
  ASSIGN_OR_RETURN(store->files_, ReadRecords(store->FilesDir()));
  ASSIGN_OR_RETURN(store->batches_, ReadRecords(store->BatchesDir()));
  for (const auto& [id, file] : store->files_) store->stored_bytes_ += file["bytes"].get<int64_t>();
  return store;
}

std::string BatchStore::FilesDir() const { return options_.dir + "/files"; }
std::string BatchStore::BatchesDir() const { return options_.dir + "/batches"; }
std::string BatchStore::ResultsPath(const std::string& batch_id, ResultFile file) const {
  return absl::StrCat(BatchesDir(), "/", batch_id,
                      file == ResultFile::kOutput ? ".output.jsonl" : ".errors.jsonl");
}

std::string BatchStore::PublishedId(const std::string& batch_id, ResultFile file) {
  return absl::StrCat("file-", file == ResultFile::kOutput ? "out-" : "err-",
                      batch_id.substr(batch_id.find('_') + 1));
}

absl::Status BatchStore::WriteFileObject(const nlohmann::json& file) {
  return WriteAtomically(absl::StrCat(FilesDir(), "/", file["id"].get<std::string>(), ".json"),
                         file.dump());
}

absl::StatusOr<nlohmann::json> BatchStore::AddFile(const std::string& filename,
                                                   const std::string& purpose,
                                                   absl::string_view content) {
  if (purpose != "batch") {
    return absl::InvalidArgumentError(
        absl::StrCat("purpose: must be \"batch\", not \"", purpose.substr(0, 64), "\""));
  }
  const auto bytes = static_cast<int64_t>(content.size());
  if (bytes == 0) return absl::InvalidArgumentError("file: is empty");
  if (bytes > options_.max_file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("file: ", bytes, " bytes, more than ",
                                                   "--batch-max-file-bytes=", options_.max_file_bytes));
  }
  const int64_t lines = std::count(content.begin(), content.end(), '\n') + (content.back() != '\n');
  if (lines > options_.max_lines) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file: ", lines, " lines, more than --batch-max-lines=", options_.max_lines));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stored_bytes_ + bytes > options_.max_stored_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "file: the batch folder holds ", stored_bytes_, " bytes and may hold ",
        "--batch-max-stored-bytes=", options_.max_stored_bytes,
        "; delete files (DELETE /v1/files/{id}) or wait for them to expire"));
  }
  const std::string id = absl::StrCat("file-", NewIdDigits());
  const nlohmann::json file =
      FileObject(id, bytes, filename.substr(0, 256), "batch", options_.retention);
  RETURN_IF_ERROR(WriteAtomically(absl::StrCat(FilesDir(), "/", id, ".jsonl"), content));
  RETURN_IF_ERROR(WriteFileObject(file));
  files_[id] = file;
  stored_bytes_ += bytes;
  return file;
}

absl::StatusOr<nlohmann::json> BatchStore::File(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(id);
  if (it == files_.end()) return FileNotFound(id);
  return it->second;
}

absl::StatusOr<std::string> BatchStore::FileContent(const std::string& id) const {
  RETURN_IF_ERROR(File(id).status());
  return ReadWhole(absl::StrCat(FilesDir(), "/", id, ".jsonl"));
}

bool BatchStore::IsActiveInput(const std::string& file_id) const {
  for (const auto& [id, batch] : batches_) {
    if (BatchIsActive(batch) && batch["input_file_id"] == file_id) return true;
  }
  return false;
}

void BatchStore::RemoveFile(const std::string& id) {
  auto it = files_.find(id);
  if (it == files_.end()) return;
  std::error_code ec;
  fs::remove(absl::StrCat(FilesDir(), "/", id, ".json"), ec);  // the record first: no orphan
  fs::remove(absl::StrCat(FilesDir(), "/", id, ".jsonl"), ec);
  stored_bytes_ -= it->second["bytes"].get<int64_t>();
  files_.erase(it);
}

absl::StatusOr<nlohmann::json> BatchStore::DeleteFile(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.count(id) == 0) return FileNotFound(id);
  if (IsActiveInput(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("file_id: ", id, " is the input of a running batch; cancel it first"));
  }
  RemoveFile(id);
  return nlohmann::json{{"id", id}, {"object", "file"}, {"deleted", true}};
}

std::vector<nlohmann::json> BatchStore::Files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NewestFirst(files_);
}

absl::StatusOr<nlohmann::json> BatchStore::CreateBatch(const nlohmann::json& request) {
  for (const auto& [key, value] : request.items()) {
    if (key != "input_file_id" && key != "endpoint" && key != "completion_window" &&
        key != "metadata") {
      return absl::InvalidArgumentError(absl::StrCat(key.substr(0, 64), ": unknown field"));
    }
  }
  const nlohmann::json endpoint = request.value("endpoint", nlohmann::json());
  if (endpoint != "/v1/embeddings") {
    return absl::InvalidArgumentError(
        "endpoint: this server runs batches of \"/v1/embeddings\" only");
  }
  ASSIGN_OR_RETURN(const absl::Duration window,
                   CompletionWindow(request.value("completion_window", nlohmann::json())));
  const nlohmann::json metadata = request.value("metadata", nlohmann::json());
  RETURN_IF_ERROR(CheckMetadata(metadata));
  const nlohmann::json input = request.value("input_file_id", nlohmann::json());
  if (!input.is_string()) return absl::InvalidArgumentError("input_file_id: must be a file id");
  std::lock_guard<std::mutex> lock(mu_);
  auto file = files_.find(input.get<std::string>());
  if (file == files_.end()) {
    return absl::NotFoundError(
        absl::StrCat("input_file_id: no file ", input.get<std::string>().substr(0, 64)));
  }
  if (file->second["purpose"] != "batch") {
    return absl::InvalidArgumentError(
        "input_file_id: names a file whose purpose is not \"batch\"");
  }
  const auto active = std::count_if(batches_.begin(), batches_.end(),
                                    [](const auto& b) { return BatchIsActive(b.second); });
  if (active >= options_.max_active) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batch: ", active, " batches are running, as many as --batch-max-active=",
                     options_.max_active, " allows; wait for one to end"));
  }
  const absl::Time now = absl::Now();
  nlohmann::json batch = {
      {"id", absl::StrCat("batch_", NewIdDigits())}, {"object", "batch"},
      {"endpoint", endpoint},        {"errors", nullptr},
      {"input_file_id", input},      {"completion_window", request["completion_window"]},
      {"status", "validating"},      {"output_file_id", nullptr},
      {"error_file_id", nullptr},    {"created_at", Seconds(now)},
      {"in_progress_at", nullptr},   {"expires_at", Seconds(now + window)},
      {"finalizing_at", nullptr},    {"completed_at", nullptr},
      {"failed_at", nullptr},        {"expired_at", nullptr},
      {"cancelling_at", nullptr},    {"cancelled_at", nullptr},
      {"request_counts", {{"total", 0}, {"completed", 0}, {"failed", 0}}},
      {"metadata", metadata}};
  const std::string id = batch["id"];
  RETURN_IF_ERROR(WriteAtomically(absl::StrCat(BatchesDir(), "/", id, ".json"), batch.dump()));
  batches_[id] = batch;
  return batch;
}

absl::StatusOr<nlohmann::json> BatchStore::Batch(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end()) return BatchNotFound(id);
  return it->second;
}

std::vector<nlohmann::json> BatchStore::Batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NewestFirst(batches_);
}

absl::StatusOr<nlohmann::json> BatchStore::UpdateBatch(
    const std::string& id, const std::function<void(nlohmann::json&)>& edit) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end()) return BatchNotFound(id);
  nlohmann::json batch = it->second;
  edit(batch);
  RETURN_IF_ERROR(WriteAtomically(absl::StrCat(BatchesDir(), "/", id, ".json"), batch.dump()));
  it->second = batch;
  return batch;
}

absl::StatusOr<nlohmann::json> BatchStore::CancelBatch(const std::string& id) {
  return UpdateBatch(id, [](nlohmann::json& batch) {
    const std::string status = batch["status"];
    if (status != "validating" && status != "in_progress") return;
    batch["status"] = "cancelling";
    batch["cancelling_at"] = Seconds(absl::Now());
  });
}

std::optional<std::string> BatchStore::NextActiveBatch() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::string> oldest;
  for (const auto& [id, batch] : batches_) {  // in creation order
    if (batch["status"] == "cancelling") return id;
    if (!oldest && BatchIsActive(batch)) oldest = id;
  }
  return oldest;
}

absl::Status BatchStore::AppendResult(const std::string& batch_id, ResultFile file,
                                      absl::string_view line) {
  const std::string path = ResultsPath(batch_id, file);
  const bool created = !fs::exists(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  absl::Status written = WriteAll(fd, absl::StrCat(line, "\n"), path);
  if (written.ok() && ::fdatasync(fd) != 0) written = IoError(path, "fdatasync");
  ::close(fd);
  if (written.ok() && created) written = SyncDir(BatchesDir());
  return written;
}

absl::StatusOr<std::vector<std::string>> BatchStore::ReadResults(const std::string& batch_id,
                                                                 ResultFile file) {
  std::string path = ResultsPath(batch_id, file);
  std::vector<std::string> lines;
  // Published already (a crash came between publishing and the batch's last update): the
  // lines are in the result File now.
  if (!fs::exists(path)) path = absl::StrCat(FilesDir(), "/", PublishedId(batch_id, file), ".jsonl");
  if (!fs::exists(path)) return lines;
  ASSIGN_OR_RETURN(std::string text, ReadWhole(path));
  const size_t complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (complete < text.size() && ::truncate(path.c_str(), static_cast<off_t>(complete)) != 0)
    return IoError(path, "truncate");  // a line torn by a crash: its request runs again
  absl::string_view rest(text.data(), complete);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    lines.emplace_back(rest.substr(0, end));
    rest.remove_prefix(end + 1);
  }
  return lines;
}

absl::StatusOr<nlohmann::json> BatchStore::PublishResults(const std::string& batch_id,
                                                          ResultFile file) {
  const std::string id = PublishedId(batch_id, file);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = files_.find(id); it != files_.end()) return it->second;
  }
  const std::string data = absl::StrCat(FilesDir(), "/", id, ".jsonl");
  const std::string results = ResultsPath(batch_id, file);
  std::error_code ec;
  if (fs::exists(results)) {
    if (::rename(results.c_str(), data.c_str()) != 0) return IoError(data, "rename");
    RETURN_IF_ERROR(SyncDir(FilesDir()));
  }
  if (!fs::exists(data)) return nlohmann::json();  // no line of this kind
  const auto bytes = static_cast<int64_t>(fs::file_size(data, ec));
  const nlohmann::json record = FileObject(
      id, bytes,
      absl::StrCat(batch_id, file == ResultFile::kOutput ? "_output.jsonl" : "_error.jsonl"),
      "batch_output", options_.retention);
  RETURN_IF_ERROR(WriteFileObject(record));
  std::lock_guard<std::mutex> lock(mu_);
  files_[id] = record;
  stored_bytes_ += bytes;
  return record;
}

void BatchStore::Expire(absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t at = Seconds(now);
  std::vector<std::string> expired;
  for (const auto& [id, file] : files_) {
    if (file["expires_at"].get<int64_t>() <= at && !IsActiveInput(id)) expired.push_back(id);
  }
  for (const std::string& id : expired) RemoveFile(id);
  const int64_t oldest_kept = Seconds(now - options_.retention);
  for (auto it = batches_.begin(); it != batches_.end();) {
    if (!BatchIsActive(it->second) && it->second["created_at"].get<int64_t>() < oldest_kept) {
      std::error_code ec;
      fs::remove(absl::StrCat(BatchesDir(), "/", it->first, ".json"), ec);
      it = batches_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace embedding::server
