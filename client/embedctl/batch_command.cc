#include "client/embedctl/batch_command.h"

#include <httplib.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

using Json = nlohmann::json;

int Fail(const absl::Status& status) {
  std::cerr << "embedctl batch: " << status.message() << "\n";
  return 1;
}

// An http://HOST:PORT client with the bearer token; https is not built in (cpp-httplib's
// OpenSSL support is off in Debian's build of embedctl).
absl::StatusOr<std::unique_ptr<httplib::Client>> Connect(const BatchCommandOptions& options) {
  std::string rest = options.api_url;
  if (absl::StartsWith(rest, "http://")) {
    rest = rest.substr(7);
  } else if (absl::StrContains(rest, "://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--api_url=", options.api_url, ": must be http://HOST:PORT (the server's --openai-listen)"));
  }
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  int port = 80;
  if (colon != std::string::npos && !absl::SimpleAtoi(rest.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("--api_url=", options.api_url, ": bad port"));
  }
  auto http = std::make_unique<httplib::Client>(rest.substr(0, colon), port);
  http->set_read_timeout(300);
  if (!options.token.empty()) http->set_bearer_token_auth(options.token.c_str());
  return http;
}

// The answer's body, or its status and error message.
absl::StatusOr<std::string> Body(const httplib::Result& result, const std::string& what) {
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat(what, ": no answer (", httplib::to_string(result.error()), ")"));
  }
  if (result->status != 200) {
    const Json error = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    const std::string message = error.is_object() && error.contains("error")
                                    ? error["error"].value("message", result->body)
                                    : result->body.substr(0, 300);
    return absl::UnknownError(absl::StrCat(what, ": HTTP ", result->status, ": ", message));
  }
  return result->body;
}

absl::StatusOr<Json> JsonBody(const httplib::Result& result, const std::string& what) {
  absl::StatusOr<std::string> body = Body(result, what);
  if (!body.ok()) return body.status();
  Json json = Json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return absl::UnknownError(absl::StrCat(what, ": not a JSON object"));
  return json;
}

bool Ended(const Json& batch) {
  const std::string status = batch.value("status", "");
  return status == "completed" || status == "failed" || status == "expired" ||
         status == "cancelled";
}

// "[########            ] 812/2000  completed 810  failed 2  in_progress", on one line.
void DrawProgress(const Json& batch) {
  const Json& counts = batch["request_counts"];
  const int64_t total = counts.value("total", int64_t{0});
  const int64_t done = counts.value("completed", int64_t{0}) + counts.value("failed", int64_t{0});
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : 0;
  std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] "
            << done << "/" << total << "  completed " << counts.value("completed", int64_t{0})
            << "  failed " << counts.value("failed", int64_t{0}) << "  "
            << batch.value("status", "") << "\x1b[K" << std::flush;
}

int Wait(httplib::Client& http, const std::string& id, const BatchCommandOptions& options) {
  const bool bar = isatty(STDERR_FILENO) != 0;
  while (true) {
    absl::StatusOr<Json> batch = JsonBody(http.Get(("/v1/batches/" + id).c_str()), "GET batch");
    if (!batch.ok()) return Fail(batch.status());
    if (bar) DrawProgress(*batch);
    if (Ended(*batch)) {
      if (bar) std::cerr << "\n";
      std::cout << batch->dump() << "\n";
      if ((*batch)["status"] == "completed") return 0;
      std::cerr << "embedctl batch: " << id << " ended " << (*batch)["status"].get<std::string>()
                << ((*batch)["errors"].is_null() ? "" : ": " + (*batch)["errors"].dump()) << "\n";
      return 1;
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(options.poll));
  }
}

int Submit(httplib::Client& http, const std::string& path, const BatchCommandOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot read ", path)));
  std::stringstream content;
  content << in.rdbuf();
  const std::string filename = path.substr(path.rfind('/') + 1);
  httplib::MultipartFormDataItems form = {{"purpose", "batch", "", ""},
                                          {"file", content.str(), filename, "application/jsonl"}};
  absl::StatusOr<Json> file = JsonBody(http.Post("/v1/files", form), "upload");
  if (!file.ok()) return Fail(file.status());
  const Json create = {{"input_file_id", (*file)["id"]},
                       {"endpoint", "/v1/embeddings"},
                       {"completion_window", "24h"}};
  absl::StatusOr<Json> batch =
      JsonBody(http.Post("/v1/batches", create.dump(), "application/json"), "create batch");
  if (!batch.ok()) return Fail(batch.status());
  if (options.wait) return Wait(http, (*batch)["id"], options);
  std::cout << batch->dump() << "\n";
  return 0;
}

int Download(httplib::Client& http, const std::string& id, const BatchCommandOptions& options) {
  absl::StatusOr<Json> batch = JsonBody(http.Get(("/v1/batches/" + id).c_str()), "GET batch");
  if (!batch.ok()) return Fail(batch.status());
  if (!Ended(*batch)) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        id, " is ", (*batch)["status"].get<std::string>(), "; `embedctl batch wait` first")));
  }
  for (const char* key : {"output_file_id", "error_file_id"}) {
    if ((*batch)[key].is_null()) continue;
    const std::string file_id = (*batch)[key];
    absl::StatusOr<std::string> content =
        Body(http.Get(("/v1/files/" + file_id + "/content").c_str()), "download");
    if (!content.ok()) return Fail(content.status());
    const std::string path = absl::StrCat(options.out_dir, "/", id,
                                          key[0] == 'o' ? "_output.jsonl" : "_error.jsonl");
    std::ofstream out(path, std::ios::binary);
    out << *content;
    if (!out) return Fail(absl::InternalError(absl::StrCat("cannot write ", path)));
    std::cout << path << "\n";
  }
  return 0;
}

}  // namespace

int BatchCommand(const std::vector<std::string>& args, const BatchCommandOptions& options) {
  if (args.size() != 2) {
    std::cerr << "usage: embedctl batch submit FILE [--wait] | status ID | wait ID | "
                 "download ID [--out_dir=DIR]   (--api_url=http://HOST:PORT)\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<httplib::Client>> http = Connect(options);
  if (!http.ok()) return Fail(http.status());
  const std::string& verb = args[0];
  if (verb == "submit") return Submit(**http, args[1], options);
  if (verb == "wait") return Wait(**http, args[1], options);
  if (verb == "download") return Download(**http, args[1], options);
  if (verb == "status") {
    absl::StatusOr<Json> batch =
        JsonBody((*http)->Get(("/v1/batches/" + args[1]).c_str()), "GET batch");
    if (!batch.ok()) return Fail(batch.status());
    std::cout << batch->dump() << "\n";
    return 0;
  }
  std::cerr << "embedctl batch: unknown verb '" << verb << "' (submit, status, wait, download)\n";
  return 2;
}

}  // namespace embedding::client
