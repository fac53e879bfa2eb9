// Checkpoint's lookups over a directory: old LayerNorm names, what the model never read, and
// the layouts it looks for (the torch.save and sharded layouts are written by python3-torch in
// tests/e2e/checkpoint_layouts_test.py).
#include "model_store/formats/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_store/formats/safetensors_writer.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Checkpoint> OpenWith(const std::map<std::string, F32Tensor>& tensors) {
  const std::string dir = testing::MakeScratchDir("checkpoint");
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  auto checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  return checkpoint.ok() ? *std::move(checkpoint) : nullptr;
}

std::vector<std::string> UnreadNames(const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const TensorView* view : checkpoint.UnreadTensors()) names.push_back(view->name);
  return names;
}

TEST(Checkpoint, GammaAndBetaAnswerForWeightAndBias) {
  auto checkpoint = OpenWith({{"embeddings.LayerNorm.gamma", {{2}, {1, 2}}},
                              {"embeddings.LayerNorm.beta", {{2}, {3, 4}}}});
  ASSERT_NE(checkpoint, nullptr);
  const TensorView* weight = checkpoint->Find("embeddings.LayerNorm.weight");
  const TensorView* bias = checkpoint->Find("embeddings.LayerNorm.bias");
  ASSERT_NE(weight, nullptr);
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(weight->name, "embeddings.LayerNorm.gamma");
  EXPECT_EQ(bias->name, "embeddings.LayerNorm.beta");
  EXPECT_TRUE(UnreadNames(*checkpoint).empty());
}

TEST(Checkpoint, ATensorOfTheNewNameWinsOverItsOldName) {
  auto checkpoint = OpenWith({{"n.weight", {{1}, {5}}}, {"n.gamma", {{1}, {6}}}});
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->Find("n.weight")->name, "n.weight");
  EXPECT_THAT(UnreadNames(*checkpoint), ElementsAre("n.gamma"));
}

TEST(Checkpoint, UnreadTensorsAreThoseNoLookupFound) {
  auto checkpoint = OpenWith({{"a", {{1}, {1}}}, {"b", {{1}, {2}}}, {"c", {{1}, {3}}}});
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->Find("missing"), nullptr);
  EXPECT_NE(checkpoint->Find("b"), nullptr);
  EXPECT_THAT(UnreadNames(*checkpoint), ElementsAre("a", "c"));
  EXPECT_EQ(checkpoint->layout(), "model.safetensors");
}

TEST(Checkpoint, NoWeightsNamesEveryLayoutLookedFor) {
  auto checkpoint = Checkpoint::Open(testing::MakeScratchDir("checkpoint_empty"));
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_EQ(checkpoint.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(checkpoint.status().message()),
              HasSubstr("none of model.safetensors, model.safetensors.index.json, "
                        "pytorch_model.bin, pytorch_model.bin.index.json exists"));
}

TEST(Checkpoint, AnArchiveThatIsNoZipIsRefusedNamingTheFile) {
  const std::string dir = testing::MakeScratchDir("checkpoint_not_zip");
  testing::WriteFile(dir + "/pytorch_model.bin", std::string("\x80\x02\x8a\x0a", 4) + "junk");
  auto checkpoint = Checkpoint::Open(dir);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_EQ(checkpoint.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(checkpoint.status().message()),
              HasSubstr(dir + "/pytorch_model.bin: not a readable zip archive"));
}

}  // namespace
}  // namespace embedding::model_store
