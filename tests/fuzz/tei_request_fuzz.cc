// libFuzzer target: raw bodies of Hugging Face TEI's routes through what the server does
// before the model runs. The first byte picks the route (/embed, /embed_sparse, /embed_all,
// /tokenize); the rest is the body. A parsed Embed call takes the shared Embed path
// (fuzz_embed_path.h); a Tokenize call's inputs are tokenised; a refusal is turned into TEI's
// status and error object, which must be JSON and name a field.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nlohmann/json.hpp"
#include "server/http/tei_api.h"
#include "tests/fuzz/fuzz_embed_path.h"

namespace {

using embedding::server::TeiRoute;

void CheckRefusal(const absl::Status& status) {
  if (status.ok() || status.code() != absl::StatusCode::kInvalidArgument) std::abort();
  if (embedding::server::TeiHttpStatus(status, /*body_error=*/true) != 422) std::abort();
  const auto body = nlohmann::json::parse(embedding::server::TeiErrorBody(status), nullptr, false);
  if (body.is_discarded() || body["error_type"] != "Validation") std::abort();
  if (std::string(status.message()).find(": ") == std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto limits = embedding::fuzzing::Limits();
  if (data[0] % 4 == 3) {
    auto call = embedding::server::ParseTeiTokenizeRequest(body, limits);
    if (!call.ok()) return CheckRefusal(call.status()), 0;
    for (const std::string& input : call->inputs)
      (void)embedding::fuzzing::DemoModel().tokenizer().Tokenize(input, "inputs");
    return 0;
  }
  const TeiRoute routes[] = {TeiRoute::kEmbed, TeiRoute::kEmbedSparse, TeiRoute::kEmbedAll};
  auto call = embedding::server::ParseTeiEmbedRequest(body, routes[data[0] % 4], limits);
  if (!call.ok()) return CheckRefusal(call.status()), 0;
  embedding::fuzzing::EmbedPath(*call);
  return 0;
}
