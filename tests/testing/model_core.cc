#include "tests/testing/model_core.h"

#include <gtest/gtest.h>

#include <random>

namespace embedding::testing {

std::string SeededWords(int n, int seed) {
  static const char* kWords[] = {"the",   "river", "sat", "under",  "a",     "quiet",
                                 "stone", "and",   "we",  "walked", "north", "to",
                                 "green", "hills", "of",  "old",    "maps",  "slowly"};
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(i ? " " : "") + kWords[rng() % 18];
  return out;
}

v1::DocumentEmbedding EmbedOne(client::EmbeddingClient& client, const std::string& model,
                               const std::string& text, client::EmbedOptions options) {
  options.model = model;
  auto response = client.Embed(client::MakeEmbedRequest({text}, options));
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? response->documents(0) : v1::DocumentEmbedding();
}

ModelCore::ModelCore(const std::string& dir) {
  auto model = model_store::Model::Load(dir, {});
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) model_ = std::move(*model);
}

std::vector<int32_t> ModelCore::Content(const std::string& text) const {
  return model_->tokenizer().Tokenize(text).value().ids;
}

std::vector<int32_t> ModelCore::WithSpecialTokens(const std::vector<int32_t>& content) const {
  return model_->tokenizer().AddSpecialTokens(content);
}

std::vector<float> ModelCore::States(const std::vector<int32_t>& ids, float tau,
                                     int64_t* dim) const {
  // Pooling does not touch the hidden states; mean is valid for every family.
  model_store::EncodeBatch batch{{ids}, {tau}, model_store::PoolingMode::kMean, false, true};
  auto result = model_->encoder().Encode(batch);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  *dim = result->dim;
  return result->hidden_states[0];
}

std::string ModelCore::TextOfAbout(size_t tokens, int seed) const {
  std::string text = SeededWords(static_cast<int>(tokens), seed);  // a token or more per word
  const auto all = model_->tokenizer().Tokenize(text).value();
  if (all.ids.size() <= tokens) return text;
  text.resize(all.spans[tokens].begin);
  text.resize(text.rfind(' '));
  return text;
}

}  // namespace embedding::testing
