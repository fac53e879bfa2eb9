// A model catalog for core and door tests: the tiny model's tokenizer and config behind a
// fake encoder and a real batcher, served as "tiny" version "1".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/core/model_catalog.h"
#include "server/core/worker_pool.h"
#include "tests/testing/test_models.h"
#include "tests/unit/server/core/fake_encoder.h"

namespace embedding::testing {

class FixedModels : public server::ModelCatalog {
 public:
  // Completions run on `completions`. Each batch takes `per_batch`, after `gate` (when set)
  // has let it through.
  FixedModels(server::WorkerPool* completions, absl::Duration per_batch,
              std::function<void()> gate = nullptr) {
    auto served = std::make_shared<server::ServedModel>();
    served->name = "tiny";
    served->version = "1";
    served->model = model_store::Model::Load(testing::TinyModelDir(), {}).value();
    encoder_ = std::make_unique<FakeEncoder>(served->model->config().hidden_size, per_batch);
    served->batcher = std::make_unique<server::Batcher>(
        [this, gate = std::move(gate)](const model_store::EncodeBatch& b) {
          if (gate) gate();
          return encoder_->Encode(b);
        },
        served->model->pooling(), server::BatcherOptions{}, completions);
    model_ = served;
  }
  absl::StatusOr<std::shared_ptr<const server::ServedModel>> Find(
      const std::string& name) const override {
    if (name.empty() || name == model_->name) return model_;
    return absl::NotFoundError("model: '" + name + "' is not served; served: tiny");
  }
  std::vector<std::shared_ptr<const server::ServedModel>> Current() const override {
    return {model_};
  }
  const std::string& default_name() const override { return model_->name; }
  const model_store::Model& model() const { return *model_->model; }

 private:
  std::unique_ptr<FakeEncoder> encoder_;
  std::shared_ptr<const server::ServedModel> model_;
};

}  // namespace embedding::testing
