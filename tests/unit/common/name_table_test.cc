// The enum name tables: both directions from one set of rows, and the list a refusal shows.
#include "common/name_table.h"

#include <gtest/gtest.h>

#include "model_store/encoder/encoder.h"
#include "model_store/formats/pooling.h"

namespace embedding {
namespace {

enum class Shade { kLight, kDark, kUnnamed };
constexpr NamedValue<Shade> kShades[] = {{Shade::kLight, "light"}, {Shade::kDark, "dark"}};

TEST(NameTable, ReadsBothWays) {
  EXPECT_STREQ(NameOf(kShades, Shade::kDark), "dark");
  EXPECT_EQ(ValueNamed(kShades, "light"), Shade::kLight);
  EXPECT_EQ(ValueNamed(kShades, "Light"), std::nullopt);  // names are exact
  EXPECT_EQ(ValueNamed(kShades, ""), std::nullopt);
}

TEST(NameTable, AValueWithoutARowGetsTheCallersWord) {
  EXPECT_STREQ(NameOf(kShades, Shade::kUnnamed), "?");
  EXPECT_STREQ(NameOf(kShades, Shade::kUnnamed, "other"), "other");
}

TEST(NameTable, ListsNamesInRowOrder) {
  EXPECT_EQ(JoinedNames(kShades), "light, dark");
  EXPECT_EQ(JoinedNames(kShades, " or "), "light or dark");
}

// The tables that replaced switches: every value named, and each name read back.
TEST(NameTable, EveryDTypeAndPoolingModeIsNamed) {
  using model_store::ComputeDType;
  for (ComputeDType dtype :
       {ComputeDType::kFloat32, ComputeDType::kBFloat16, ComputeDType::kInt8, ComputeDType::kAuto})
    EXPECT_EQ(model_store::ComputeDTypeNamed(model_store::ComputeDTypeName(dtype)), dtype);
  EXPECT_EQ(model_store::ComputeDTypeNames(), "fp32, bf16, fp16, int8, auto");
  using model_store::PoolingMode;
  EXPECT_STREQ(model_store::PoolingModeName(PoolingMode::kCls), "cls");
  EXPECT_STREQ(model_store::PoolingModeName(PoolingMode::kMean), "mean");
  EXPECT_STREQ(model_store::PoolingModeName(PoolingMode::kMax), "max");
  EXPECT_STREQ(model_store::PoolingModeName(PoolingMode::kLastToken), "last_token");
}

}  // namespace
}  // namespace embedding
