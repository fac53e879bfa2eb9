// libFuzzer target: raw request bytes through what the server does before the model runs.
// The first byte picks the message (Embed, an EmbedStream item, Tokenize: the rest is its
// protobuf wire form; or an OpenAI /v1/embeddings or Cohere /v2/embed body: the rest is its
// JSON; or a Batch API upload: a Content-Type line, then the multipart body). Parse (with the
// wire-level input count) into the core's EmbedCall, then the shared Embed path
// (fuzz_embed_path.h); an upload's parts are read whole. TEI's bodies have a target of their own (tei_request_fuzz.cc).
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "embedding/v1/embedding.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "server/grpc/grpc_messages.h"
#include "server/http/cohere_embed_api.h"
#include "server/http/multipart_form.h"
#include "server/http/openai_api.h"
#include "tests/fuzz/fuzz_embed_path.h"

namespace {

using embedding::fuzzing::DemoModel;
using embedding::fuzzing::EmbedPath;
using embedding::fuzzing::Limits;

void EmbedPath(embedding::v1::EmbedRequest* request) {
  auto call = embedding::server::ToEmbedCall(request, absl::InfiniteFuture());
  if (call.ok()) EmbedPath(*call);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Every invalid-UTF-8 input makes protobuf log a line (the server rate-limits them).
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  grpc::Slice slice(data + 1, size - 1);
  const grpc::ByteBuffer buffer(&slice, 1);
  const int64_t max_inputs = Limits().max_inputs_per_request;
  switch (data[0] % 6) {
    case 0: {
      embedding::v1::EmbedRequest request;
      if (embedding::server::ParseRequest(buffer, &request, max_inputs).ok()) EmbedPath(&request);
      break;
    }
    case 1: {
      (void)embedding::server::StreamRequestId(buffer);
      embedding::v1::EmbedStreamRequest item;
      if (embedding::server::ParseRequest(buffer, &item, max_inputs).ok())
        EmbedPath(item.mutable_request());
      break;
    }
    case 2: {
      embedding::v1::TokenizeRequest request;
      if (!embedding::server::ParseRequest(buffer, &request, max_inputs).ok()) break;
      for (const std::string& input : request.inputs())
        (void)DemoModel().tokenizer().Tokenize(input, "inputs");
      break;
    }
    case 3: {
      auto body = embedding::server::ParseOpenAiEmbeddingsRequest(
          std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), Limits());
      if (body.ok()) EmbedPath(body->call);
      break;
    }
    case 4: {
      auto body = embedding::server::ParseCohereEmbed(
          std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), Limits());
      if (body.ok()) EmbedPath(body->call);
      break;
    }
    case 5: {
      const absl::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
      const size_t newline = std::min(rest.find('\n'), rest.size());
      auto parts = embedding::server::ParseMultipartForm(
          rest.substr(0, newline), rest.substr(std::min(newline + 1, rest.size())));
      if (!parts.ok()) break;
      size_t bytes = 0;
      for (const auto& part : *parts) bytes += part.data.size();
      if (bytes > size) __builtin_trap();  // the parts view the body: never more than it
      break;
    }
  }
  return 0;
}
