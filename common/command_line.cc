#include "common/command_line.h"

#include <cstdlib>

#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace embedding {

std::vector<std::string> UnderscoreFlagNames(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (!absl::StartsWith(arg, "--")) continue;
    for (size_t c = 2; c < arg.size() && arg[c] != '='; ++c) {
      if (arg[c] == '-') arg[c] = '_';
    }
  }
  return args;
}

std::string EnvironmentValue(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string EnvironmentName(absl::string_view prefix, absl::string_view flag) {
  return absl::StrCat(prefix, "_", absl::AsciiStrToUpper(flag));
}

absl::Status ApplyEnvironmentFallbacks(absl::string_view prefix, absl::string_view defined_in) {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::EndsWith(flag->Filename(), defined_in)) continue;
    const std::string variable = EnvironmentName(prefix, name);
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error))
      return absl::InvalidArgumentError(absl::StrCat(variable, "=", value, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace embedding
