#include "model_store/formats/sentence_transformers_writer.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace embedding::model_store {
namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::Status WriteTextFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat(path.string(), ": write failed"));
  return absl::OkStatus();
}

absl::Status WriteSentenceTransformersFiles(const fs::path& root, int hidden_size,
                                            const std::string& pooling, bool normalize,
                                            const Json& prompts) {
  std::error_code ec;
  fs::create_directories(root / "1_Pooling", ec);
  if (!ec && normalize) fs::create_directories(root / "2_Normalize", ec);
  if (ec) return absl::InternalError(absl::StrCat(root.string(), ": ", ec.message()));
  auto module = [](int idx, const std::string& path, const std::string& type) {
    return Json{{"idx", idx},
                {"name", std::to_string(idx)},
                {"path", path},
                {"type", "sentence_transformers.models." + type}};
  };
  Json modules = Json::array({module(0, "", "Transformer"), module(1, "1_Pooling", "Pooling")});
  if (normalize) modules.push_back(module(2, "2_Normalize", "Normalize"));
  RETURN_IF_ERROR(WriteTextFile(root / "modules.json", modules.dump(2)));
  const Json pooling_config = {{"word_embedding_dimension", hidden_size},
                               {"pooling_mode_cls_token", pooling == "cls"},
                               {"pooling_mode_mean_tokens", pooling == "mean"},
                               {"pooling_mode_max_tokens", pooling == "max"},
                               {"pooling_mode_lasttoken", pooling == "last_token"},
                               {"pooling_mode_mean_sqrt_len_tokens", false}};
  RETURN_IF_ERROR(WriteTextFile(root / "1_Pooling" / "config.json", pooling_config.dump(2)));
  const Json st = {{"prompts", prompts}, {"default_prompt_name", nullptr}};
  return WriteTextFile(root / "config_sentence_transformers.json", st.dump(2));
}

}  // namespace embedding::model_store
