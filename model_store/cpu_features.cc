#include "model_store/cpu_features.h"

#include <fstream>
#include <sstream>
#include <string>

namespace embedding::model_store {
namespace {

std::string ReadBf16Flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string flag, found;
    while (words >> flag) {
      if (flag == "avx512_bf16" || flag == "amx_bf16") found += (found.empty() ? "" : " ") + flag;
    }
    return found;  // the first CPU's flags speak for all
  }
  return "";
}

const std::string& Bf16Flags() {
  static const std::string* const kFlags = new std::string(ReadBf16Flags());
  return *kFlags;
}

}  // namespace

bool CpuHasNativeBf16() { return !Bf16Flags().empty(); }

}  // namespace embedding::model_store
