#include "model_store/kernels/cpu_features.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace embedding::model_store {
namespace {

// The flags oneDNN dispatches on for the GEMMs of fp32, bf16 and int8 linear layers.
constexpr const char* kDTypeFlags[] = {"avx2",        "avx512f",  "avx512_bf16", "avx512_fp16",
                                       "avx512_vnni", "avx_vnni", "amx_bf16",    "amx_int8"};

struct CpuInfo {
  std::string model_name;
  std::set<std::string> flags;  // those of kDTypeFlags the CPU has
};

CpuInfo ReadCpuInfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  bool flags_read = false;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (info.model_name.empty() && line.rfind("model name", 0) == 0) info.model_name = value;
    if (!flags_read && line.rfind("flags", 0) == 0) {  // the first CPU's flags speak for all
      flags_read = true;
      std::istringstream words(value);
      for (std::string flag; words >> flag;) {
        for (const char* wanted : kDTypeFlags)
          if (flag == wanted) info.flags.insert(flag);
      }
    }
  }
  return info;
}

const CpuInfo& Info() {
  static const CpuInfo* const kInfo = new CpuInfo(ReadCpuInfo());
  return *kInfo;
}

}  // namespace

bool CpuHasNativeBf16() {
  return Info().flags.count("avx512_bf16") > 0 || Info().flags.count("amx_bf16") > 0;
}

const std::string& CpuIsa() {
  static const std::string* const kIsa = new std::string(
      absl::StrCat(Info().model_name.empty() ? "unknown CPU" : Info().model_name, "; ",
                   Info().flags.empty() ? "no AVX2" : absl::StrJoin(Info().flags, " ")));
  return *kIsa;
}

}  // namespace embedding::model_store
