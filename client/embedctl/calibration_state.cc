#include "client/embedctl/calibration_state.h"

#include <cstring>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "model_store/formats/content_digest.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {
using Json = nlohmann::json;

// Vectors as base64 of their fp32 bytes: exact, and a quarter of decimal text's size.
Json Encode(const std::vector<std::vector<float>>& vectors) {
  Json out = Json::array();
  for (const auto& v : vectors) {
    out.push_back(absl::Base64Escape(
        absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float))));
  }
  return out;
}

bool Decode(const Json& encoded, std::vector<std::vector<float>>* vectors) {
  if (!encoded.is_array()) return false;
  for (const Json& item : encoded) {
    std::string bytes;
    if (!item.is_string() || !absl::Base64Unescape(item.get<std::string>(), &bytes) ||
        bytes.size() % sizeof(float) != 0) {
      return false;
    }
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    vectors->push_back(std::move(v));
  }
  return true;
}

std::string EntryLine(const std::string& bucket, float tau, const SavedVectors& vectors) {
  return Json({{"bucket", bucket},
               {"tau", tau},
               {"documents", Encode(vectors.documents)},
               {"queries", Encode(vectors.queries)}})
             .dump() +
         "\n";
}

absl::Status CannotWrite(const std::string& path) {
  return absl::InternalError(absl::StrCat("--state-file: cannot write ", path));
}

}  // namespace

absl::StatusOr<CalibrationState> CalibrationState::Open(const std::string& path,
                                                        const std::string& fingerprint,
                                                        bool resume) {
  CalibrationState state;
  state.path_ = path;
  if (resume) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume: no calibration state in ", path, " (see --state-file)"));
    }
    const Json header = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!header.is_object() || header.value("fingerprint", "") != fingerprint) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--resume: ", path,
          " holds another run (another model version, corpus, task or prompt); run without "
          "--resume to start over"));
    }
    while (std::getline(in, line)) {
      const Json entry = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      SavedVectors vectors;
      if (!entry.is_object() || !entry.contains("bucket") || !entry.contains("tau") ||
          !Decode(entry["documents"], &vectors.documents) ||
          !Decode(entry["queries"], &vectors.queries)) {
        break;  // the line an interruption cut short, and anything after it
      }
      state.saved_[{entry["bucket"].get<std::string>(), entry["tau"].get<float>()}] =
          std::move(vectors);
    }
    // Rewritten whole, so that a cut line does not stay in the middle of the file.
    std::ofstream out(path, std::ios::trunc);
    out << Json({{"fingerprint", fingerprint}}).dump() << "\n";
    for (const auto& [key, vectors] : state.saved_)
      out << EntryLine(key.first, key.second, vectors);
    if (!out.flush()) return CannotWrite(path);
    return state;
  }
  std::ofstream out(path, std::ios::trunc);
  out << Json({{"fingerprint", fingerprint}}).dump() << "\n";
  if (!out.flush()) return CannotWrite(path);
  return state;
}

const SavedVectors* CalibrationState::Find(const std::string& bucket, float tau) const {
  auto it = saved_.find({bucket, tau});
  return it == saved_.end() ? nullptr : &it->second;
}

absl::Status CalibrationState::Save(const std::string& bucket, float tau, SavedVectors vectors) {
  std::ofstream out(path_, std::ios::app);
  out << EntryLine(bucket, tau, vectors);
  if (!out.flush()) return CannotWrite(path_);
  saved_[{bucket, tau}] = std::move(vectors);
  return absl::OkStatus();
}

std::string CalibrationFingerprint(const std::string& model_version, const std::string& prompt,
                                   const std::string& tasks_json) {
  return model_store::Sha256Hex(Json({model_version, prompt, tasks_json}).dump());
}

}  // namespace embedding::client
