#include "model_store/formats/tempscale_schedule.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/length_buckets.h"
#include "common/name_table.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

absl::Status Invalid(const std::string& label, const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(label, ": ", field, ": ", why));
}

// A number field of `object`, within [lo, hi]; `path` names it in errors.
absl::StatusOr<double> Number(const std::string& label, const Json& object, const std::string& path,
                              const char* key, double lo, double hi) {
  const auto it = object.find(key);
  const std::string field = absl::StrCat(path, ".", key);
  if (it == object.end()) return Invalid(label, field, "missing");
  if (!it->is_number()) return Invalid(label, field, "must be a number");
  const double value = it->get<double>();
  if (!(value >= lo && value <= hi))
    return Invalid(label, field, absl::StrCat(value, " is outside [", lo, ", ", hi, "]"));
  return value;
}

constexpr double kMaxTokens = std::numeric_limits<uint32_t>::max();
constexpr size_t kMaxFileBytes = 64 << 10;
// Any finite number, so that CheckTau can name an out-of-range tau by its value.
constexpr double kHuge = 1e30;

absl::Status CheckTau(const std::string& label, const std::string& field, double tau) {
  if (tau > 0 && tau <= 1) return absl::OkStatus();
  return Invalid(label, field, absl::StrCat(tau, " is outside (0, 1]"));
}

}  // namespace

absl::StatusOr<TempScaleSchedule> TempScaleSchedule::Parse(const std::string& label,
                                                           const std::string& text) {
  if (text.size() > kMaxFileBytes) {
    return Invalid(label, "(file)",
                   absl::StrCat(text.size(), " bytes; allowed up to ", kMaxFileBytes));
  }
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return Invalid(label, "(file)", "not a JSON object");
  const auto schedule = json.find("schedule");
  if (schedule == json.end() || !schedule->is_object())
    return Invalid(label, "schedule", "missing or not an object");
  const auto form = schedule->find("form");
  if (form == schedule->end() || !form->is_string())
    return Invalid(label, "schedule.form", "missing; must be \"piecewise\" or \"log_ratio\"");
  TempScaleSchedule out;
  out.source_ = label;
  if (const auto source = json.find("source"); source != json.end() && source->is_string())
    out.source_ = absl::StrCat(label, ": ", source->get<std::string>());
  absl::Status read;
  if (*form == "piecewise") {
    read = out.ReadPiecewise(label, *schedule);
  } else if (*form == "log_ratio") {
    read = out.ReadLogRatio(label, *schedule);
  } else {
    read = Invalid(label, "schedule.form",
                   absl::StrCat(form->dump(), " is not \"piecewise\" or \"log_ratio\""));
  }
  if (!read.ok()) return read;
  return out;
}

absl::Status TempScaleSchedule::ReadPiecewise(const std::string& label, const Json& schedule) {
  form_ = Form::kPiecewise;
  const auto points = schedule.find("points");
  if (points == schedule.end() || !points->is_array() || points->empty())
    return Invalid(label, "schedule.points", "must be a non-empty array");
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string path = absl::StrCat("schedule.points[", i, "]");
    const Json& point = (*points)[i];
    if (!point.is_object()) return Invalid(label, path, "must be an object");
    auto min_tokens = Number(label, point, path, "min_tokens", 0, kMaxTokens);
    if (!min_tokens.ok()) return min_tokens.status();
    auto tau = Number(label, point, path, "tau", -kHuge, kHuge);
    if (!tau.ok()) return tau.status();
    if (auto s = CheckTau(label, path + ".tau", *tau); !s.ok()) return s;
    const SchedulePoint p{static_cast<uint32_t>(*min_tokens), static_cast<float>(*tau)};
    if (i == 0 && p.min_tokens != 0)
      return Invalid(label, path + ".min_tokens", "the first point must start at 0");
    if (i > 0 && p.min_tokens <= points_.back().min_tokens)
      return Invalid(label, path + ".min_tokens", "must increase from point to point");
    if (i > 0 && p.tau > points_.back().tau) {
      return Invalid(label, path + ".tau",
                     absl::StrCat(p.tau, " is above the previous point's ", points_.back().tau,
                                  "; tau must not increase with length"));
    }
    points_.push_back(p);
  }
  return absl::OkStatus();
}

absl::Status TempScaleSchedule::ReadLogRatio(const std::string& label, const Json& schedule) {
  form_ = Form::kLogRatio;
  auto n_ref = Number(label, schedule, "schedule", "n_ref", 2, kMaxTokens);
  if (!n_ref.ok()) return n_ref.status();
  auto alpha = Number(label, schedule, "schedule", "alpha", 0, 16);
  if (!alpha.ok()) return alpha.status();
  auto tau_min = Number(label, schedule, "schedule", "tau_min", -kHuge, kHuge);
  if (!tau_min.ok()) return tau_min.status();
  if (auto s = CheckTau(label, "schedule.tau_min", *tau_min); !s.ok()) return s;
  n_ref_ = static_cast<uint32_t>(*n_ref);
  alpha_ = static_cast<float>(*alpha);
  tau_min_ = static_cast<float>(*tau_min);
  for (const LengthBucket& bucket : AllLengthBuckets())
    points_.push_back({static_cast<uint32_t>(bucket.min_tokens), TauFor(bucket.min_tokens)});
  return absl::OkStatus();
}

absl::StatusOr<TempScaleSchedule> TempScaleSchedule::Load(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::path(dir) / kTempScaleFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return TempScaleSchedule();
  return LoadFile(path.string());
}

absl::StatusOr<TempScaleSchedule> TempScaleSchedule::LoadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return absl::NotFoundError(absl::StrCat(path, ": no such schedule file"));
  // Bounded before it is read: a schedule is a few lines, and a huge or deeply nested file
  // must not cost a model load its memory or stack.
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": (file): ", ec ? ec.message() : absl::StrCat(size, " bytes"),
                     "; allowed up to ", kMaxFileBytes, " bytes"));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InternalError(absl::StrCat(path, ": cannot read"));
  return Parse(path, text.str());
}

float TempScaleSchedule::TauFor(int64_t content_tokens) const {
  switch (form_) {
    case Form::kNone:
      return 1.0f;
    case Form::kPiecewise: {
      float tau = points_.front().tau;
      for (const SchedulePoint& p : points_)
        if (static_cast<int64_t>(p.min_tokens) <= content_tokens) tau = p.tau;
      return tau;
    }
    case Form::kLogRatio: {
      if (content_tokens <= static_cast<int64_t>(n_ref_)) return 1.0f;
      const double ratio =
          std::log(static_cast<double>(n_ref_)) / std::log(static_cast<double>(content_tokens));
      return std::max(tau_min_, static_cast<float>(std::pow(ratio, alpha_)));
    }
  }
  return 1.0f;
}

const char* TempScaleSchedule::form_name() const {
  constexpr NamedValue<Form> kFormNames[] = {
      {Form::kNone, "none"}, {Form::kPiecewise, "piecewise"}, {Form::kLogRatio, "log_ratio"}};
  return NameOf(kFormNames, form_);
}

}  // namespace embedding::model_store
