// sentence-transformers' Dense modules after pooling: each pooled vector through
// activation(W x + b) in modules.json's order, checked against the same arithmetic done here
// on the plain model's pooled vector; and every way such a module can be wrong, named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "model_store/formats/safetensors_writer.h"
#include "model_store/model.h"
#include "nlohmann/json.hpp"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
namespace fs = std::filesystem;

struct Linear {
  int64_t in = 0, out = 0;
  std::vector<float> weight, bias;  // [out, in], [out] (empty: no bias)
};

Linear RandomLinear(int64_t in, int64_t out, bool bias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
  Linear l{in, out, std::vector<float>(in * out), {}};
  for (float& w : l.weight) w = normal(rng);
  if (bias) {
    l.bias.resize(out);
    for (float& b : l.bias) b = normal(rng);
  }
  return l;
}

// Writes `folder` as sentence-transformers saves a Dense module.
void WriteDense(const std::string& dir, const std::string& folder, const Linear& l,
                const std::string& activation) {
  fs::create_directories(dir + "/" + folder);
  testing::WriteFile(dir + "/" + folder + "/config.json", Json{{"in_features", l.in},
                                                               {"out_features", l.out},
                                                               {"bias", !l.bias.empty()},
                                                               {"activation_function", activation}}
                                                              .dump());
  std::map<std::string, F32Tensor> tensors;
  tensors["linear.weight"] = F32Tensor{{l.out, l.in}, l.weight};
  if (!l.bias.empty()) tensors["linear.bias"] = F32Tensor{{l.out}, l.bias};
  ASSERT_TRUE(WriteSafetensors(dir + "/" + folder + "/model.safetensors", tensors).ok());
}

void WriteModules(const std::string& dir,
                  const std::vector<std::pair<std::string, std::string>>& extra) {
  Json modules = Json::array({{{"idx", 0},
                               {"name", "0"},
                               {"path", ""},
                               {"type", "sentence_transformers.models.Transformer"}},
                              {{"idx", 1},
                               {"name", "1"},
                               {"path", "1_Pooling"},
                               {"type", "sentence_transformers.models.Pooling"}}});
  for (const auto& [path, type] : extra) {
    modules.push_back({{"idx", modules.size()}, {"name", path}, {"path", path}, {"type", type}});
  }
  testing::WriteFile(dir + "/modules.json", modules.dump());
}

void EditJsonFile(const std::string& path, const std::function<void(Json&)>& edit) {
  Json json = Json::parse(testing::ReadFile(path));
  edit(json);
  testing::WriteFile(path, json.dump());
}

std::vector<float> Apply(const Linear& l, const std::vector<float>& x, bool tanh) {
  std::vector<float> y(l.out);
  for (int64_t o = 0; o < l.out; ++o) {
    double sum = l.bias.empty() ? 0.0 : l.bias[o];
    for (int64_t i = 0; i < l.in; ++i) sum += static_cast<double>(l.weight[o * l.in + i]) * x[i];
    y[o] = static_cast<float>(tanh ? std::tanh(sum) : sum);
  }
  return y;
}

std::vector<float> Pooled(const Model& model, const std::vector<int32_t>& ids) {
  EncodeBatch batch;
  batch.sequences = {model.tokenizer().AddSpecialTokens(ids)};
  batch.temperatures = {0.7f};
  batch.pooling = model.pooling();
  batch.normalize = false;  // as the server asks: Dense modules act before any normalisation
  auto result = model.encoder().Encode(batch);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->pooled[0] : std::vector<float>();
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  return worst;
}

TEST(DenseModules, PooledVectorsGoThroughEachModuleInOrder) {
  auto plain = Model::Load(testing::TinyModelDir(), {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  const int64_t hidden = (*plain)->config().hidden_size;
  const Linear first = RandomLinear(hidden, 32, /*bias=*/true, 1);
  const Linear second = RandomLinear(32, 16, /*bias=*/false, 2);
  const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "dense");
  WriteDense(dir, "2_Dense", first, "torch.nn.modules.activation.Tanh");
  WriteDense(dir, "3_Dense", second, "torch.nn.modules.linear.Identity");
  WriteModules(dir, {{"2_Dense", "sentence_transformers.models.Dense"},
                     {"3_Dense", "sentence_transformers.models.Dense"},
                     {"4_Normalize", "sentence_transformers.models.Normalize"}});
  auto dense = Model::Load(dir, {});
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ((*dense)->encoder().embedding_dim(), 16);
  EXPECT_EQ((*dense)->sentence_transformers().dense.size(), 2u);

  const std::vector<int32_t> ids = {100, 200, 300, 400, 500};
  const std::vector<float> want = Apply(second, Apply(first, Pooled(**plain, ids), true), false);
  EXPECT_LE(MaxAbsDiff(Pooled(**dense, ids), want), 1e-5);
  // Late chunking pools states itself, then asks the model to project them: the same numbers.
  std::vector<float> projected = Pooled(**plain, ids);
  (*dense)->encoder().ProjectPooled(&projected);
  EXPECT_LE(MaxAbsDiff(projected, want), 1e-5);
  // Without Dense modules, nothing changes.
  std::vector<float> untouched = Pooled(**plain, ids);
  (*plain)->encoder().ProjectPooled(&untouched);
  EXPECT_EQ(untouched, Pooled(**plain, ids));
}

TEST(DenseModules, EveryWrongModuleIsRefusedNamingItsFileAndField) {
  const int64_t hidden = 96;  // the tiny model's
  auto refused = [](const std::string& name, const std::function<void(const std::string&)>& write,
                    absl::StatusCode code, const std::vector<std::string>& words) {
    const std::string dir = testing::CopyModelDir(testing::TinyModelDir(), "dense_" + name);
    write(dir);
    auto model = Model::Load(dir, {});
    EXPECT_EQ(model.status().code(), code) << name << ": " << model.status();
    for (const auto& word : words) EXPECT_THAT(model.status().message(), HasSubstr(word)) << name;
  };
  const std::string dense_type = "sentence_transformers.models.Dense";
  refused("in_features",
          [&](const std::string& dir) {
            WriteDense(dir, "2_Dense", RandomLinear(64, 8, true, 3),
                       "torch.nn.modules.activation.Tanh");
            WriteModules(dir, {{"2_Dense", dense_type}});
          },
          absl::StatusCode::kDataLoss, {"2_Dense/config.json", "in_features 64", "hidden_size 96"});
  refused("activation",
          [&](const std::string& dir) {
            WriteDense(dir, "2_Dense", RandomLinear(hidden, 8, true, 3),
                       "torch.nn.modules.activation.Softsign");
            WriteModules(dir, {{"2_Dense", dense_type}});
          },
          absl::StatusCode::kInvalidArgument, {"2_Dense/config.json", "Softsign", "Tanh"});
  refused("shape",
          [&](const std::string& dir) {
            WriteDense(dir, "2_Dense", RandomLinear(hidden, 8, true, 3),
                       "torch.nn.modules.activation.Tanh");
            EditJsonFile(dir + "/2_Dense/config.json", [](Json& j) { j["out_features"] = 9; });
            WriteModules(dir, {{"2_Dense", dense_type}});
          },
          absl::StatusCode::kDataLoss, {"2_Dense", "linear.weight", "[8, 96]", "[9, 96]"});
  refused("no_weights",
          [&](const std::string& dir) {
            WriteDense(dir, "2_Dense", RandomLinear(hidden, 8, true, 3),
                       "torch.nn.modules.activation.Tanh");
            fs::remove(dir + "/2_Dense/model.safetensors");
            WriteModules(dir, {{"2_Dense", dense_type}});
          },
          absl::StatusCode::kNotFound, {"2_Dense", "model.safetensors", "pytorch_model.bin"});
  refused("escape",
          [&](const std::string& dir) {
            WriteModules(dir, {{"../2_Dense", dense_type}});
          },
          absl::StatusCode::kDataLoss, {"modules.json", "bad module path"});
  refused("unknown_module",
          [&](const std::string& dir) {
            WriteModules(dir, {{"2_LayerNorm", "sentence_transformers.models.LayerNorm"}});
          },
          absl::StatusCode::kInvalidArgument, {"modules.json", "LayerNorm", "Dense"});
}

}  // namespace
}  // namespace embedding::model_store
