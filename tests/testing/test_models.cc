#include "tests/testing/test_models.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "model_store/formats/safetensors_file.h"

namespace embedding::testing {
namespace fs = std::filesystem;

std::string TinyModelDir() {
  const char* dir = std::getenv("TINY_MODEL_DIR");
  if (dir == nullptr) dir = EMB_TINY_MODEL_DIR;  // written by the ctest fixture
  if (dir == nullptr || !fs::exists(fs::path(dir) / "config.json")) {
    ADD_FAILURE() << "the tiny demo model is missing: run through ctest, which writes it first";
    return "";
  }
  return dir;
}

std::string SmallModelDir() {
  const char* dir = std::getenv("SMALL_MODEL_DIR");
  return dir ? dir : EMB_SMALL_MODEL_DIR;
}

std::string XlmRobertaModelDir() { return EMB_XLMR_MODEL_DIR; }

std::string NomicBertModelDir() { return EMB_NOMIC_MODEL_DIR; }
std::string GteModelDir() { return EMB_GTE_MODEL_DIR; }
std::string JinaBertModelDir() { return EMB_JINA_MODEL_DIR; }
std::string ModernBertModelDir() { return EMB_MODERNBERT_MODEL_DIR; }
std::string Qwen3ModelDir() { return EMB_QWEN3_MODEL_DIR; }
std::string Qwen2ModelDir() { return EMB_QWEN2_MODEL_DIR; }
std::string RobertaModelDir() { return EMB_ROBERTA_MODEL_DIR; }
std::string CamembertModelDir() { return EMB_CAMEMBERT_MODEL_DIR; }
std::string DistilBertModelDir() { return EMB_DISTILBERT_MODEL_DIR; }
std::string MpnetModelDir() { return EMB_MPNET_MODEL_DIR; }
std::string Gemma3ModelDir() { return EMB_GEMMA3_MODEL_DIR; }
std::string T5ModelDir() { return EMB_T5_MODEL_DIR; }
std::string T5GatedModelDir() { return EMB_T5_GATED_MODEL_DIR; }
std::string NomicMoeModelDir() { return EMB_NOMIC_MOE_MODEL_DIR; }
std::string JinaV3ModelDir() { return EMB_JINA_V3_MODEL_DIR; }
std::string NomicBertHeadsOf64ModelDir() { return EMB_NOMIC_HEADS64_MODEL_DIR; }

std::string SingleTokenWords(int n, uint32_t seed) {
  static const char* kWords[] = {"the", "cat", "sat", "on",  "a",  "mat", "and", "dog", "ran",
                                 "to",  "big", "red", "sun", "in", "sky", "of",  "we",  "go"};
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (i) out += ' ';
    out += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  return out;
}

std::string MakeScratchDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(::testing::TempDir()) / (std::string(info ? info->test_suite_name() : "suite") +
                                        "." + (info ? info->name() : "test") + "." + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string CopyModelDir(const std::string& from, const std::string& name) {
  const std::string to = MakeScratchDir(name);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return to;
}

std::map<std::string, model_store::F32Tensor> ReadTensors(const std::string& path) {
  std::map<std::string, model_store::F32Tensor> out;
  auto file = model_store::SafetensorsFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return out;
  for (const auto& [name, view] : (*file)->tensors()) {
    EXPECT_EQ(view.dtype, model_store::DType::kF32) << name;
    model_store::F32Tensor t;
    t.shape = view.shape;
    t.values.resize(view.size_bytes / sizeof(float));
    std::memcpy(t.values.data(), view.data, view.size_bytes);
    out[name] = std::move(t);
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace embedding::testing
