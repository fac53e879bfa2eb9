// tempscale.json: both forms parse and give the documented tau by length; anything
// increasing, out of (0, 1] or malformed refuses to load, naming the field; a model directory
// with a bad file refuses to load as a whole.
#include "model_store/formats/tempscale_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "model_store/model.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<TempScaleSchedule> Parse(const std::string& text) {
  return TempScaleSchedule::Parse("tempscale.json", text);
}

std::string Piecewise(const std::string& points) {
  return R"({"schedule": {"form": "piecewise", "points": [)" + points + "]}}";
}

TEST(TempScaleScheduleTest, PiecewiseTakesTheLastPointAtOrBelowTheLength) {
  auto s = Parse(Piecewise(R"({"min_tokens": 0, "tau": 1}, {"min_tokens": 64, "tau": 0.9},
                              {"min_tokens": 256, "tau": 0.7})"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->form(), TempScaleSchedule::Form::kPiecewise);
  EXPECT_FLOAT_EQ(s->TauFor(0), 1.0f);
  EXPECT_FLOAT_EQ(s->TauFor(63), 1.0f);
  EXPECT_FLOAT_EQ(s->TauFor(64), 0.9f);
  EXPECT_FLOAT_EQ(s->TauFor(255), 0.9f);
  EXPECT_FLOAT_EQ(s->TauFor(256), 0.7f);
  EXPECT_FLOAT_EQ(s->TauFor(100000), 0.7f);
}

TEST(TempScaleScheduleTest, LogRatioFollowsItsFormula) {
  auto s = Parse(R"({"schedule": {"form": "log_ratio", "n_ref": 128, "alpha": 2,
                     "tau_min": 0.6}, "source": "hand-made"})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FLOAT_EQ(s->TauFor(10), 1.0f);
  EXPECT_FLOAT_EQ(s->TauFor(128), 1.0f);
  const double at_512 = std::pow(std::log(128.0) / std::log(512.0), 2);
  EXPECT_NEAR(s->TauFor(512), at_512, 1e-6);
  EXPECT_FLOAT_EQ(s->TauFor(1 << 20), 0.6f);  // (7/20)^2 is below tau_min
  EXPECT_THAT(s->source(), HasSubstr("hand-made"));
  // Its points are the formula at each length bucket's start, non-increasing.
  ASSERT_FALSE(s->points().empty());
  for (size_t i = 1; i < s->points().size(); ++i)
    EXPECT_LE(s->points()[i].tau, s->points()[i - 1].tau);
}

TEST(TempScaleScheduleTest, NoFileMeansTauOneEverywhere) {
  auto s = TempScaleSchedule::Load(testing::MakeScratchDir("no_schedule"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->form(), TempScaleSchedule::Form::kNone);
  EXPECT_FLOAT_EQ(s->TauFor(5000), 1.0f);
  EXPECT_THAT(s->source(), HasSubstr("AUTO applies tau = 1"));
}

TEST(TempScaleScheduleTest, BadSchedulesNameTheirField) {
  const std::pair<std::string, std::string> cases[] = {
      {Piecewise(R"({"min_tokens": 0, "tau": 0.8}, {"min_tokens": 64, "tau": 0.9})"),
       "schedule.points[1].tau: 0.9 is above the previous point's 0.8"},
      {Piecewise(R"({"min_tokens": 0, "tau": 1.5})"),
       "schedule.points[0].tau: 1.5 is outside (0, 1]"},
      {Piecewise(R"({"min_tokens": 0, "tau": 0})"), "schedule.points[0].tau: 0 is outside (0, 1]"},
      {Piecewise(R"({"min_tokens": 0, "tau": -1})"), "schedule.points[0].tau"},
      {Piecewise(R"({"min_tokens": 5, "tau": 1})"), "schedule.points[0].min_tokens: the first"},
      {Piecewise(R"({"min_tokens": 0, "tau": 1}, {"min_tokens": 0, "tau": 1})"),
       "schedule.points[1].min_tokens: must increase"},
      {Piecewise(R"({"min_tokens": 0, "tau": "low"})"), "schedule.points[0].tau: must be a number"},
      {Piecewise(R"({"tau": 1})"), "schedule.points[0].min_tokens: missing"},
      {Piecewise(""), "schedule.points: must be a non-empty array"},
      {R"({"schedule": {"form": "cubic"}})", "schedule.form: \"cubic\" is not"},
      {R"({"schedule": {}})", "schedule.form: missing"},
      {R"({"points": []})", "schedule: missing"},
      {R"({"schedule": {"form": "log_ratio", "n_ref": 128, "alpha": 1, "tau_min": 1.2}})",
       "schedule.tau_min: 1.2 is outside (0, 1]"},
      {R"({"schedule": {"form": "log_ratio", "n_ref": 1, "alpha": 1, "tau_min": 0.5}})",
       "schedule.n_ref: 1 is outside [2,"},
      {R"({"schedule": {"form": "log_ratio", "n_ref": 128, "tau_min": 0.5}})",
       "schedule.alpha: missing"},
      {"{not json", "(file): not a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    auto s = Parse(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.status().message(), HasSubstr("tempscale.json: " + want)) << text;
  }
}

TEST(TempScaleScheduleTest, AHugeFileIsRefusedBeforeItIsParsed) {
  const std::string dir = testing::MakeScratchDir("huge_schedule");
  // 100,000 nested arrays would take the JSON parser's recursion deep into the stack.
  testing::WriteFile(dir + "/tempscale.json", std::string(100000, '[') + std::string(100000, ']'));
  auto s = TempScaleSchedule::Load(dir);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(),
              HasSubstr("tempscale.json: (file): 200000 bytes; allowed up to 65536"));
}

TEST(TempScaleScheduleTest, AModelWithABadScheduleRefusesToLoad) {
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "bad_schedule");
  testing::WriteFile(dir + "/tempscale.json",
                     Piecewise(R"({"min_tokens": 0, "tau": 0.5}, {"min_tokens": 9, "tau": 0.6})"));
  auto model = Model::Load(dir, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("tempscale.json: schedule.points[1].tau"));
}

}  // namespace
}  // namespace embedding::model_store
