// What an exception thrown by a forward pass means to the caller. Out of memory is
// RESOURCE_EXHAUSTED, so the server can retry with less (server/core/batcher.h); anything
// else is INTERNAL. The one place that reads LibTorch's and oneDNN's exceptions.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace embedding::model_store {

// `what` says what failed ("encoder forward failed"); the exception's text follows it.
absl::Status ForwardFailure(const std::string& what, const std::exception& error);

}  // namespace embedding::model_store
