#include "server/model_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "model_store/model_version.h"

namespace embedding::server {
absl::StatusOr<std::unique_ptr<ModelRegistry>> ModelRegistry::Load(
    const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
    Batcher::Executor completions, const BatchObserverFactory& observers) {
  auto registry = std::make_unique<ModelRegistry>();
  model_store::ModelOptions load_options;
  load_options.encoder.dtype = options.dtype;
  load_options.encoder.intra_op_threads = options.intra_op_threads;
  for (const auto& source : options.sources) {
    for (const auto& existing : registry->models_) {
      if (existing->name == source.name)
        return absl::InvalidArgumentError(
            absl::StrCat("--model: name '", source.name, "' given twice"));
    }
    absl::StatusOr<std::unique_ptr<model_store::Model>> model;
    inference->RunAndWait([&] { model = model_store::Model::Load(source.directory, load_options); });
    if (!model.ok()) {
      return absl::Status(model.status().code(),
                          absl::StrCat("model '", source.name, "': ", model.status().message()));
    }
    auto served = std::make_unique<ServedModel>();
    served->name = source.name;
    served->version = model_store::ComputeModelVersion(source.directory);
    served->model = *std::move(model);
    const model_store::Encoder* encoder = &served->model->encoder();
    served->batcher = std::make_unique<Batcher>(
        [encoder, inference](const model_store::EncodeBatch& batch) {
          absl::StatusOr<model_store::EncodeResult> result;
          inference->RunAndWait([&] { result = encoder->Encode(batch); });
          return result;
        },
        served->model->pooling(), batching, completions, observers ? observers(*served) : nullptr);
    registry->models_.push_back(std::move(served));
  }
  registry->default_name_ =
      options.default_model.empty() ? registry->models_.front()->name : options.default_model;
  if (!registry->Find(registry->default_name_).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--default_model=", options.default_model, ": not among the served models"));
  }
  return registry;
}

absl::StatusOr<const ServedModel*> ModelRegistry::Find(const std::string& name) const {
  const std::string& wanted = name.empty() ? default_name_ : name;
  for (const auto& m : models_) {
    if (m->name == wanted) return m.get();
  }
  std::vector<std::string> names;
  for (const auto& m : models_) names.push_back(m->name);
  return absl::NotFoundError(
      absl::StrCat("model: ", QuotedValue(wanted), " is not served; available: ",
                   absl::StrJoin(names, ", ")));
}

}  // namespace embedding::server
