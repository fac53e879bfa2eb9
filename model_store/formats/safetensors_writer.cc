#include "model_store/formats/safetensors_writer.h"

#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

std::string SerializeSafetensors(const std::map<std::string, F32Tensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t bytes = tensor.values.size() * sizeof(float);
    header[name] = {
        {"dtype", "F32"}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string header_text = header.dump();
  // Pad with spaces so the data area starts 8-byte aligned, as the reference writer does.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + header_text.size() + offset);
  uint64_t len = header_text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  out += header_text;
  for (const auto& [name, tensor] : tensors) {
    out.append(reinterpret_cast<const char*>(tensor.values.data()),
               tensor.values.size() * sizeof(float));
  }
  return out;
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, F32Tensor>& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string bytes = SerializeSafetensors(tensors);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace embedding::model_store
