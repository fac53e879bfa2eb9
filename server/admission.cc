#include "server/admission.h"

#include "absl/strings/str_cat.h"

namespace embedding::server {

absl::Status Admission::AdmitRequest() {
  if (requests_.fetch_add(1) >= max_requests_) {
    requests_.fetch_sub(1);
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: ", max_requests_,
                     " requests in flight (--max-concurrent-requests); retry "
                     "with backoff"));
  }
  return absl::OkStatus();
}

absl::Status Admission::ReserveTokens(int64_t tokens) {
  const int64_t before = tokens_.fetch_add(tokens);
  if (before + tokens > max_tokens_ && before > 0) {
    tokens_.fetch_sub(tokens);
    return absl::ResourceExhaustedError(absl::StrCat(
        "server busy: ", before, " tokens queued, this request needs ", tokens,
        " more, above the bound of ", max_tokens_, " (--max-queued-tokens); retry with backoff"));
  }
  return absl::OkStatus();
}

}  // namespace embedding::server
