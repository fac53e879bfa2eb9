// What a pull tells the person waiting for it. On a terminal: one line per file, redrawn with
// bytes, rate and time left. In logs (not a terminal): one line when a file starts and one when
// it ends, so a Kubernetes log shows what happened without a line per megabyte.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace embedding::model_store {

// Called by one pull at a time, files one after another.
class DownloadProgress {
 public:
  virtual ~DownloadProgress() = default;
  virtual void FileStarted(const std::string& label, int64_t size, int64_t resumed_from) = 0;
  virtual void FileAdvanced(int64_t received) = 0;  // bytes of the file so far
  virtual void FileFinished(const absl::Status& status) = 0;
  // A decision worth a line: "Hub unreachable, starting from the cache".
  virtual void Note(const std::string& message) = 0;
};

// Redraws a status line on `fd` (stderr for embedctl).
std::unique_ptr<DownloadProgress> TerminalProgress(int fd);
// One line per event through `log`.
std::unique_ptr<DownloadProgress> LogLineProgress(std::function<void(const std::string&)> log);
// TerminalProgress(fd) when fd is a terminal, else LogLineProgress(log).
std::unique_ptr<DownloadProgress> ProgressFor(int fd, std::function<void(const std::string&)> log);

}  // namespace embedding::model_store
