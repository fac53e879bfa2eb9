// Command-line conventions shared by embedding_server and embedctl: flags may be typed with
// dashes (--max-batch-tokens) and fall back to environment variables (12-factor containers).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace embedding {

// argv with every flag name spelled with underscores, as absl wants them
// (--max-batch-tokens=3 becomes --max_batch_tokens=3); values and positionals are untouched.
std::vector<std::string> UnderscoreFlagNames(int argc, char** argv);

// The value of environment variable `name`; "" when it is unset.
std::string EnvironmentValue(const char* name);

// The environment variable that backs flag `flag`: PREFIX_FLAG_NAME in upper case.
std::string EnvironmentName(absl::string_view prefix, absl::string_view flag);

// Sets every flag defined in a source file whose path ends with `defined_in` from its
// environment variable, where one is set. Call before parsing the command line, so a flag
// given there wins. INVALID_ARGUMENT naming the variable when its value does not parse.
absl::Status ApplyEnvironmentFallbacks(absl::string_view prefix, absl::string_view defined_in);

}  // namespace embedding
