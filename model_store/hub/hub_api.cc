#include "model_store/hub/hub_api.h"

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace embedding::model_store {
namespace {

using Json = nlohmann::json;

std::string Header(const HttpResponse& response, const std::string& name) {
  auto it = response.headers.find(name);
  return it == response.headers.end() ? "" : it->second;
}

// `"abc"` and `W/"abc"` are both abc.
std::string NormalizeEtag(std::string etag) {
  absl::string_view view(etag);
  absl::ConsumePrefix(&view, "W/");
  view = absl::StripPrefix(absl::StripSuffix(view, "\""), "\"");
  return absl::AsciiStrToLower(view);
}

int64_t SizeHeader(const std::string& value) {
  int64_t size = -1;
  return absl::SimpleAtoi(value, &size) && size >= 0 ? size : -1;
}

std::string EscapedPath(const std::string& path) {
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/'))
    parts.push_back(UrlEscape(std::string(part)));
  return absl::StrJoin(parts, "/");
}

bool IsRedirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

absl::Status HubError(const HttpResponse& response, const std::string& repo,
                      const std::string& what, const HubSettings& settings) {
  const std::string subject = what.empty() ? repo : absl::StrCat(repo, ": ", what);
  const std::string code = Header(response, "x-error-code");
  const std::string hub_message = Header(response, "x-error-message");
  const std::string said =
      hub_message.empty() ? "" : absl::StrCat(" (the Hub says: ", hub_message.substr(0, 300), ")");
  const std::string token_hint = settings.token.empty()
                                     ? "no token was sent: set HF_TOKEN or write one to "
                                       "$HF_HOME/token"
                                     : "the token in HF_TOKEN (or $HF_TOKEN_PATH) was refused";
  if (code == "RepoNotFound") {
    return absl::NotFoundError(
        absl::StrCat(subject, ": repository not found on ", settings.endpoint,
                     " (a private repository looks the same when ", token_hint, ")", said));
  }
  if (code == "RevisionNotFound")
    return absl::NotFoundError(absl::StrCat(subject, ": not found on the Hub", said));
  if (code == "EntryNotFound")
    return absl::NotFoundError(
        absl::StrCat(subject, ": not in the repository at this commit", said));
  if (code == "GatedRepo") {
    return absl::PermissionDeniedError(absl::StrCat(
        subject, ": the repository is gated; accept its conditions at ", settings.endpoint, "/",
        repo, " with an account whose token is in HF_TOKEN; ", token_hint, said));
  }
  const std::string status = absl::StrCat("HTTP ", response.status, " from the Hub");
  switch (response.status) {
    case 401:
      return absl::UnauthenticatedError(
          absl::StrCat(subject, ": ", status, "; ", token_hint, said));
    case 403:
      return absl::PermissionDeniedError(
          absl::StrCat(subject, ": ", status, "; ", token_hint, said));
    case 404:
      return absl::NotFoundError(absl::StrCat(subject, ": ", status, said));
    case 429:
      return absl::UnavailableError(absl::StrCat(subject, ": ", status, " (rate limited)", said));
    default:
      if (response.status >= 500)
        return absl::UnavailableError(absl::StrCat(subject, ": ", status, said));
      return absl::UnknownError(absl::StrCat(subject, ": unexpected ", status, said));
  }
}

HubApi::HubApi(const HubSettings& settings, HttpClient* http)
    : settings_(settings), http_(http), origin_(UrlOrigin(settings.endpoint)) {}

absl::StatusOr<HttpResponse> HubApi::Send(HttpRequest request, const BodySink* sink,
                                          bool stop_at_other_origin, std::string* final_url) {
  const std::vector<std::string> base_headers = request.headers;
  for (int hop = 0; hop <= 10; ++hop) {
    const bool own_host = !origin_.empty() && UrlOrigin(request.url) == origin_;
    request.headers = base_headers;
    if (own_host && !settings_.token.empty())
      request.headers.push_back(absl::StrCat("Authorization: Bearer ", settings_.token));
    ASSIGN_OR_RETURN(HttpResponse response, http_->Send(request, sink));
    if (!IsRedirect(response.status) || response.redirect_url.empty()) {
      *final_url = request.url;
      return response;
    }
    if (stop_at_other_origin && UrlOrigin(response.redirect_url) != origin_) {
      *final_url = request.url;
      return response;
    }
    request.url = response.redirect_url;
  }
  return absl::UnavailableError(absl::StrCat(request.url, ": more than 10 redirects"));
}

absl::StatusOr<RevisionInfo> HubApi::Revision(const HubReference& reference) {
  HttpRequest request;
  request.url = absl::StrCat(settings_.endpoint, "/api/models/", reference.repo, "/revision/",
                             UrlEscape(reference.revision), "?blobs=true");
  request.headers = {"Accept: application/json"};
  std::string url;
  ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr, false, &url));
  const std::string subject = ToString(reference);
  if (response.status != 200) {
    return HubError(response, reference.repo, absl::StrCat("revision ", reference.revision),
                    settings_);
  }
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  RevisionInfo info;
  if (body.is_object() && body.contains("sha") && body["sha"].is_string())
    info.commit = body["sha"].get<std::string>();
  if (!IsCommitHash(info.commit)) {
    return absl::DataLossError(absl::StrCat(
        subject, ": the Hub's revision answer has no 40-hex \"sha\" (", url.substr(0, 200), ")"));
  }
  const Json& siblings = body.contains("siblings") ? body["siblings"] : Json::array();
  for (const Json& sibling : siblings.is_array() ? siblings : Json::array()) {
    if (!sibling.is_object() || !sibling.contains("rfilename") || !sibling["rfilename"].is_string())
      continue;
    RepoFile file;
    file.path = sibling["rfilename"].get<std::string>();
    if (sibling.contains("size") && sibling["size"].is_number_integer())
      file.size = sibling["size"].get<int64_t>();
    if (sibling.contains("blobId") && sibling["blobId"].is_string())
      file.blob_id = sibling["blobId"].get<std::string>();
    if (sibling.contains("lfs") && sibling["lfs"].is_object()) {
      const Json& lfs = sibling["lfs"];
      if (lfs.contains("sha256") && lfs["sha256"].is_string())
        file.lfs_sha256 = lfs["sha256"].get<std::string>();
      if (lfs.contains("size") && lfs["size"].is_number_integer())
        file.size = lfs["size"].get<int64_t>();
    }
    info.files.push_back(std::move(file));
  }
  return info;
}

absl::StatusOr<FileLocation> HubApi::Locate(const std::string& repo, const std::string& commit,
                                            const std::string& path) {
  HttpRequest request;
  request.method = "HEAD";
  request.url =
      absl::StrCat(settings_.endpoint, "/", repo, "/resolve/", commit, "/", EscapedPath(path));
  // The size must be of the bytes, not of a compressed transfer.
  request.headers = {"Accept-Encoding: identity"};
  std::string url;
  ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr, true, &url));
  const std::string subject = absl::StrCat(repo, ": ", path);
  FileLocation location;
  if (IsRedirect(response.status)) {
    location.url = response.redirect_url;  // the large-file store; no token goes there
  } else if (response.status == 200) {
    location.url = url;
  } else {
    return HubError(response, repo, path, settings_);
  }
  const std::string served_commit = Header(response, "x-repo-commit");
  if (!served_commit.empty() && served_commit != commit) {
    return absl::DataLossError(absl::StrCat(subject, ": the Hub answered for commit ",
                                            served_commit, " when asked for ", commit));
  }
  std::string etag = Header(response, "x-linked-etag");
  if (etag.empty()) etag = Header(response, "etag");
  location.etag = NormalizeEtag(etag);
  std::string size = Header(response, "x-linked-size");
  if (size.empty()) size = Header(response, "content-length");
  location.size = SizeHeader(size);
  if (location.etag.empty() || location.size < 0) {
    return absl::DataLossError(absl::StrCat(subject, ": the Hub announced no ",
                                            location.etag.empty() ? "ETag" : "size",
                                            " for the file, so it cannot be verified"));
  }
  return location;
}

absl::StatusOr<HttpResponse> HubApi::Download(const std::string& url, int64_t range_start,
                                              const BodySink& sink) {
  HttpRequest request;
  request.url = url;
  request.headers = {"Accept-Encoding: identity"};
  if (range_start > 0) request.range_start = range_start;
  std::string final_url;
  return Send(request, &sink, false, &final_url);
}

}  // namespace embedding::model_store
