// A model's length-adaptive TempScale schedule: τ as a function of a sequence's content-token
// count, which AUTO requests apply per encoded sequence. Read from `tempscale.json` in the model
// directory (written by `embedctl calibrate`, or by hand):
//
//   {"schedule": {"form": "piecewise",
//                 "points": [{"min_tokens": 0, "tau": 1.0}, {"min_tokens": 256, "tau": 0.8}]},
//    "source": "embedctl calibrate --corpus=docs.txt ..."}
//   {"schedule": {"form": "log_ratio", "n_ref": 128, "alpha": 1.0, "tau_min": 0.5}}
//
// piecewise: τ(n) is the tau of the last point with min_tokens <= n (the first point is 0).
// log_ratio: τ(n) = 1 for n <= n_ref, max(tau_min, (ln n_ref / ln n)^alpha) above: the
// entropy-invariant scaling of attention logits by log n (Su 2021; Qwen's logn attention;
// SSMax, arXiv 2501.19399), written as a temperature.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

inline constexpr char kTempScaleFile[] = "tempscale.json";

struct SchedulePoint {
  uint32_t min_tokens = 0;
  float tau = 1.0f;
};

class TempScaleSchedule {
 public:
  enum class Form { kNone, kPiecewise, kLogRatio };

  // No schedule: τ = 1 at every length.
  TempScaleSchedule() = default;

  // Parses the file's JSON text; `label` names it in errors. INVALID_ARGUMENT naming the field
  // for a malformed file, a τ outside (0, 1] or a schedule that increases with length.
  static absl::StatusOr<TempScaleSchedule> Parse(const std::string& label, const std::string& text);
  // `dir`/tempscale.json, or no schedule when the file does not exist.
  static absl::StatusOr<TempScaleSchedule> Load(const std::string& dir);
  // A schedule file anywhere (--tempscale-schedule): NOT_FOUND naming it when it is missing,
  // then as Parse.
  static absl::StatusOr<TempScaleSchedule> LoadFile(const std::string& path);

  // τ for a sequence of `content_tokens` tokens (special tokens not counted).
  float TauFor(int64_t content_tokens) const;

  Form form() const { return form_; }
  const char* form_name() const;
  // piecewise: its points; log_ratio: the formula at the start of each length bucket.
  const std::vector<SchedulePoint>& points() const { return points_; }
  uint32_t n_ref() const { return n_ref_; }
  float alpha() const { return alpha_; }
  float tau_min() const { return tau_min_; }
  // Where it came from: the file and its "source" text, or why there is none.
  const std::string& source() const { return source_; }

 private:
  // The two forms' fields of the "schedule" object; INVALID_ARGUMENT naming the field.
  absl::Status ReadPiecewise(const std::string& label, const nlohmann::json& schedule);
  absl::Status ReadLogRatio(const std::string& label, const nlohmann::json& schedule);

  Form form_ = Form::kNone;
  std::vector<SchedulePoint> points_;
  uint32_t n_ref_ = 0;
  float alpha_ = 0;
  float tau_min_ = 0;  // log_ratio only
  std::string source_ = "no tempscale.json: AUTO applies tau = 1";
};

}  // namespace embedding::model_store
