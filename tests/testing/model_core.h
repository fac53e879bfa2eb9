// The model core loaded in the test's own process: the independent side that integration tests
// check served vectors against, and seeded texts of a known length in the model's tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/embedding_client.h"
#include "model_store/model.h"

namespace embedding::testing {

// `n` seeded English words; how many tokens they make depends on the tokenizer.
std::string SeededWords(int n, int seed);

// The first document of one Embed call to `model`, an empty one (and a test failure) on error.
v1::DocumentEmbedding EmbedOne(client::EmbeddingClient& client, const std::string& model,
                               const std::string& text, client::EmbedOptions options);

class ModelCore {
 public:
  // Loads the model at `dir`; a failed load fails the test (check ok() before using it).
  explicit ModelCore(const std::string& dir);

  bool ok() const { return model_ != nullptr; }
  const model_store::Model& model() const { return *model_; }

  // The text's token ids without special tokens, and with them.
  std::vector<int32_t> Content(const std::string& text) const;
  std::vector<int32_t> WithSpecialTokens(const std::vector<int32_t>& content) const;

  // The final hidden states of `ids` as given ([ids x dim], row-major), one forward at `tau`.
  std::vector<float> States(const std::vector<int32_t>& ids, float tau, int64_t* dim) const;

  // Seeded words cut at a word boundary so the text makes at most `tokens` tokens (and close to
  // it): how many tokens a word makes depends on the tokenizer.
  std::string TextOfAbout(size_t tokens, int seed) const;

 private:
  std::unique_ptr<model_store::Model> model_;
};

}  // namespace embedding::testing
