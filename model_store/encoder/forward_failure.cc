#include "model_store/encoder/forward_failure.h"

#include <new>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "c10/util/Exception.h"

namespace embedding::model_store {

absl::Status ForwardFailure(const std::string& what, const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text =
      torch_error != nullptr ? torch_error->what_without_backtrace() : std::string(error.what());
  // A device allocator throws OutOfMemoryError; LibTorch's CPU allocator a plain c10::Error
  // ("DefaultCPUAllocator: can't allocate memory" in 1.13, "not enough memory" later, with
  // ENOMEM's text), and operator new std::bad_alloc.
  bool out_of_memory = dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr ||
                       dynamic_cast<const std::bad_alloc*>(&error) != nullptr;
  for (const char* marker :
       {"can't allocate memory", "not enough memory", "out of memory", "Cannot allocate memory"}) {
    out_of_memory = out_of_memory || absl::StrContains(text, marker);
  }
  const std::string message = absl::StrCat(what, ": ", text);
  return out_of_memory ? absl::ResourceExhaustedError(absl::StrCat("out of memory: ", message))
                       : absl::InternalError(message);
}

}  // namespace embedding::model_store
