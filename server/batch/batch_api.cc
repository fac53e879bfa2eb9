#include "server/batch/batch_api.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "server/http/json_body.h"
#include "server/http/multipart_form.h"
#include "server/http/openai_api.h"

namespace embedding::server {
namespace {

// Room for the multipart form's own bytes (boundaries, part headers, the purpose field).
constexpr size_t kFormOverheadBytes = 64 << 10;

HttpResponse Json(const nlohmann::json& value) {
  return HttpResponse{200, "application/json", value.dump(), {}};
}

// OpenAI's list object over `records` (newest first, or oldest with order=asc): `limit` of them
// (in [1, max_limit]) after the id `after`.
absl::StatusOr<HttpResponse> Page(std::vector<nlohmann::json> records,
                                  const HttpExchange& exchange, int default_limit,
                                  int max_limit) {
  int limit = default_limit;
  const std::string limit_text = exchange.QueryParam("limit");
  if (!limit_text.empty() &&
      (!absl::SimpleAtoi(limit_text, &limit) || limit < 1 || limit > max_limit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be an integer from 1 to ", max_limit));
  }
  const std::string order = exchange.QueryParam("order");
  if (order == "asc") {
    std::reverse(records.begin(), records.end());
  } else if (!order.empty() && order != "desc") {
    return absl::InvalidArgumentError("order: must be \"asc\" or \"desc\"");
  }
  const std::string purpose = exchange.QueryParam("purpose");
  if (!purpose.empty()) {
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const nlohmann::json& r) {
                                   return r.value("purpose", "") != purpose;
                                 }),
                  records.end());
  }
  size_t start = 0;
  if (const std::string after = exchange.QueryParam("after"); !after.empty()) {
    while (start < records.size() && records[start]["id"] != after) ++start;
    if (start == records.size()) {
      return absl::InvalidArgumentError(absl::StrCat("after: no object ", after.substr(0, 64)));
    }
    ++start;
  }
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = start; i < records.size() && data.size() < static_cast<size_t>(limit); ++i)
    data.push_back(std::move(records[i]));
  const bool has_more = start + data.size() < records.size();
  nlohmann::json page = {{"object", "list"}, {"data", data}, {"has_more", has_more}};
  page["first_id"] = data.empty() ? nlohmann::json() : data.front()["id"];
  page["last_id"] = data.empty() ? nlohmann::json() : data.back()["id"];
  return Json(page);
}

// "{id}" or "{id}/{action}" after `prefix`.
std::pair<std::string, std::string> IdAndAction(const std::string& path, absl::string_view prefix) {
  absl::string_view rest = absl::StripPrefix(path, prefix);
  const size_t slash = rest.find('/');
  if (slash == absl::string_view::npos) return {std::string(rest), ""};
  return {std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
}

absl::Status NoRoute(const HttpExchange& exchange) {
  return absl::NotFoundError(absl::StrCat("no route ", exchange.method(), " ",
                                          exchange.path().substr(0, 128)));
}

}  // namespace

BatchApi::BatchApi(BatchStore* store, BatchRunner* runner, const ApiContext& context)
    : store_(store), runner_(runner), context_(context) {}

void BatchApi::AddRoutes(HttpListener& listener) {
  auto route = [this](Work work) {
    return [this, work](std::shared_ptr<HttpExchange> exchange) {
      Serve(std::move(exchange), work);
    };
  };
  listener.Route("POST", "/v1/files", route([this](const HttpExchange& e) { return Upload(e); }));
  listener.SetBodyLimit("POST", "/v1/files",
                        static_cast<size_t>(store_->options().max_file_bytes) + kFormOverheadBytes);
  listener.Route("GET", "/v1/files", route([this](const HttpExchange& e) {
                   return Page(store_->Files(), e, 10000, 10000);
                 }));
  listener.RoutePrefix("GET", "/v1/files/",
                       route([this](const HttpExchange& e) { return FileRoute(e); }));
  listener.RoutePrefix("DELETE", "/v1/files/",
                       route([this](const HttpExchange& e) { return FileRoute(e); }));
  listener.Route("POST", "/v1/batches",
                 route([this](const HttpExchange& e) { return CreateBatch(e); }));
  listener.Route("GET", "/v1/batches", route([this](const HttpExchange& e) {
                   return Page(store_->Batches(), e, 20, 100);
                 }));
  listener.RoutePrefix("GET", "/v1/batches/",
                       route([this](const HttpExchange& e) { return BatchRoute(e); }));
  listener.RoutePrefix("POST", "/v1/batches/",
                       route([this](const HttpExchange& e) { return BatchRoute(e); }));
}

void BatchApi::Serve(std::shared_ptr<HttpExchange> exchange, Work work) {
  auto answer = [](HttpExchange& exchange, const absl::StatusOr<HttpResponse>& response) {
    if (response.ok()) return exchange.Respond(*response);
    exchange.Respond(ErrorAnswer(HttpStatusOf(response.status()), "application/json",
                                 OpenAiErrorBody(response.status())));
  };
  if (absl::Status allowed = Authorize(context_.auth, *exchange); !allowed.ok())
    return answer(*exchange, allowed);
  disk_.Schedule([exchange = std::move(exchange), work = std::move(work), answer] {
    answer(*exchange, work(*exchange));
  });
}

absl::StatusOr<HttpResponse> BatchApi::Upload(const HttpExchange& exchange) {
  ASSIGN_OR_RETURN(std::vector<FormPart> parts,
                   ParseMultipartForm(exchange.Header("Content-Type"), exchange.body()));
  const FormPart* file = nullptr;
  const FormPart* purpose = nullptr;
  for (const FormPart& part : parts) {
    if (part.name == "file") file = &part;
    if (part.name == "purpose") purpose = &part;
  }
  if (purpose == nullptr) return absl::InvalidArgumentError("purpose: missing (\"batch\")");
  if (file == nullptr) return absl::InvalidArgumentError("file: missing (a JSONL file)");
  ASSIGN_OR_RETURN(nlohmann::json stored,
                   store_->AddFile(file->filename, std::string(purpose->data), file->data));
  return Json(stored);
}

absl::StatusOr<HttpResponse> BatchApi::FileRoute(const HttpExchange& exchange) {
  const auto [id, action] = IdAndAction(exchange.path(), "/v1/files/");
  if (exchange.method() == "DELETE" && action.empty()) {
    ASSIGN_OR_RETURN(nlohmann::json deleted, store_->DeleteFile(id));
    return Json(deleted);
  }
  if (action.empty()) {
    ASSIGN_OR_RETURN(nlohmann::json file, store_->File(id));
    return Json(file);
  }
  if (action != "content") return NoRoute(exchange);
  ASSIGN_OR_RETURN(std::string content, store_->FileContent(id));
  return HttpResponse{200, "application/jsonl", std::move(content), {}};
}

absl::StatusOr<HttpResponse> BatchApi::CreateBatch(const HttpExchange& exchange) {
  ASSIGN_OR_RETURN(nlohmann::json request,
                   ParseJsonObject(exchange.body(), context_.embedder->limits()));
  ASSIGN_OR_RETURN(nlohmann::json batch, store_->CreateBatch(request));
  runner_->Wake();
  return Json(batch);
}

absl::StatusOr<HttpResponse> BatchApi::BatchRoute(const HttpExchange& exchange) {
  const auto [id, action] = IdAndAction(exchange.path(), "/v1/batches/");
  if (exchange.method() == "GET" && action.empty()) {
    ASSIGN_OR_RETURN(nlohmann::json batch, store_->Batch(id));
    return Json(batch);
  }
  if (exchange.method() != "POST" || action != "cancel") return NoRoute(exchange);
  ASSIGN_OR_RETURN(nlohmann::json batch, store_->CancelBatch(id));
  runner_->Wake();
  return Json(batch);
}

}  // namespace embedding::server
