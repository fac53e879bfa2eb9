// libFuzzer target: a model directory's JSON files. The input is config.json, modules.json,
// the Pooling module's config.json and config_sentence_transformers.json, separated by NUL
// bytes. Each parser must accept a file or refuse it with an error, never crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "model_store/formats/sentence_transformers_config.h"
#include "model_store/spec/encoder_config.h"

namespace {
namespace fs = std::filesystem;

// One directory per fuzzing process, rewritten for every input.
const fs::path& ModelDir() {
  static const fs::path dir = [] {
    fs::path path = fs::temp_directory_path() / ("model_config_fuzz." + std::to_string(getpid()));
    fs::create_directories(path / "1_Pooling");
    return path;
  }();
  return dir;
}

std::vector<std::string_view> SplitAtNul(std::string_view input, size_t parts) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    const size_t nul = input.find('\0');
    if (nul == std::string_view::npos) break;
    out.push_back(input.substr(0, nul));
    input.remove_prefix(nul + 1);
  }
  out.push_back(input);
  out.resize(parts);
  return out;
}

void WriteOrRemove(const fs::path& path, std::string_view text) {
  if (text.empty()) {
    fs::remove(path);
    return;
  }
  std::ofstream(path, std::ios::binary)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = SplitAtNul(std::string_view(reinterpret_cast<const char*>(data), size), 4);
  auto config = embedding::model_store::ParseEncoderConfig("config.json", std::string(files[0]));
  // What the encoder relies on when it sizes its tensors.
  if (config.ok() && (config->num_attention_heads <= 0 || config->head_dim() <= 0 ||
                      config->hidden_size % config->num_attention_heads != 0 ||
                      config->max_sequence_length() < 2 || config->intermediate_size <= 0)) {
    std::abort();
  }
  const fs::path& dir = ModelDir();
  WriteOrRemove(dir / "modules.json", files[1]);
  WriteOrRemove(dir / "1_Pooling" / "config.json", files[2]);
  WriteOrRemove(dir / "config_sentence_transformers.json", files[3]);
  (void)embedding::model_store::LoadSentenceTransformersConfig(dir.string());
  return 0;
}
