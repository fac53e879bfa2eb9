#include "model_store/hub/download_progress.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace embedding::model_store {
namespace {

std::string Bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GB", bytes / 1e9);
  if (bytes >= (1 << 20)) return absl::StrFormat("%.1f MB", bytes / 1e6);
  return absl::StrFormat("%.1f kB", bytes / 1e3);
}

// Rate and ETA over the bytes this run received (a resumed prefix is not a rate).
class FileClock {
 public:
  void Start(int64_t size, int64_t resumed_from) {
    start_ = absl::Now();
    size_ = size;
    resumed_from_ = received_ = resumed_from;
  }
  void Advance(int64_t received) { received_ = received; }
  double Rate() const {
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    return seconds > 0 ? (received_ - resumed_from_) / seconds : 0;
  }
  std::string Summary() const {
    const double rate = Rate();
    std::string out = absl::StrCat(Bytes(received_), " / ", Bytes(size_), ", ",
                                   Bytes(static_cast<int64_t>(rate)), "/s");
    if (rate > 0 && size_ > received_)
      absl::StrAppend(&out, absl::StrFormat(", %.0f s left", (size_ - received_) / rate));
    return out;
  }
  double Seconds() const { return absl::ToDoubleSeconds(absl::Now() - start_); }
  int64_t received() const { return received_; }
  int64_t resumed_from() const { return resumed_from_; }

 private:
  absl::Time start_;
  int64_t size_ = 0, resumed_from_ = 0, received_ = 0;
};

class Terminal : public DownloadProgress {
 public:
  explicit Terminal(int fd) : fd_(fd) {}
  void FileStarted(const std::string& label, int64_t size, int64_t resumed_from) override {
    label_ = label;
    clock_.Start(size, resumed_from);
    last_draw_ = absl::InfinitePast();
    Draw("");
  }
  void FileAdvanced(int64_t received) override {
    clock_.Advance(received);
    if (absl::Now() - last_draw_ > absl::Milliseconds(200)) Draw("");
  }
  void FileFinished(const absl::Status& status) override {
    Draw(status.ok() ? " done\n" : " failed\n");
  }
  void Note(const std::string& message) override { Write(absl::StrCat(message, "\n")); }

 private:
  void Draw(const std::string& end) {
    last_draw_ = absl::Now();
    Write(absl::StrCat("\r\x1b[K", label_, "  ", clock_.Summary(), end));
  }
  void Write(const std::string& text) { (void)!write(fd_, text.data(), text.size()); }

  int fd_;
  std::string label_;
  FileClock clock_;
  absl::Time last_draw_;
};

class LogLines : public DownloadProgress {
 public:
  explicit LogLines(std::function<void(const std::string&)> log) : log_(std::move(log)) {}
  void FileStarted(const std::string& label, int64_t size, int64_t resumed_from) override {
    label_ = label;
    clock_.Start(size, resumed_from);
    log_(absl::StrCat("downloading ", label, " (", Bytes(size),
                      resumed_from > 0 ? absl::StrCat(", resuming at ", Bytes(resumed_from)) : "",
                      ")"));
  }
  void FileAdvanced(int64_t received) override { clock_.Advance(received); }
  void FileFinished(const absl::Status& status) override {
    if (status.ok()) {
      log_(absl::StrFormat("downloaded %s: %s in %.1f s (%s/s)", label_,
                           Bytes(clock_.received() - clock_.resumed_from()), clock_.Seconds(),
                           Bytes(static_cast<int64_t>(clock_.Rate()))));
    } else {
      log_(absl::StrCat("download of ", label_, " failed after ", Bytes(clock_.received())));
    }
  }
  void Note(const std::string& message) override { log_(message); }

 private:
  std::function<void(const std::string&)> log_;
  std::string label_;
  FileClock clock_;
};

}  // namespace

std::unique_ptr<DownloadProgress> TerminalProgress(int fd) {
  return std::make_unique<Terminal>(fd);
}

std::unique_ptr<DownloadProgress> LogLineProgress(std::function<void(const std::string&)> log) {
  return std::make_unique<LogLines>(std::move(log));
}

std::unique_ptr<DownloadProgress> ProgressFor(int fd, std::function<void(const std::string&)> log) {
  if (isatty(fd)) return TerminalProgress(fd);
  return LogLineProgress(std::move(log));
}

}  // namespace embedding::model_store
