// `embedctl pull REPO[@REV]...`: fills Hugging Face's shared cache with the files each model
// needs, as the server would at start, without starting one (images, init containers,
// air-gapped hosts). Speaks to the Hub only, never to a server.
#pragma once

#include <string>
#include <vector>

#include "model_store/hub/hub_settings.h"

namespace embedding::client {

// Pulls every reference in turn. An argument may list several, comma-separated, each
// [NAME=]REPO[@REVISION] as --model and EMBEDDING_MODELS take them (NAME=PATH is skipped), so an
// init container can pull "$(EMBEDDING_MODELS)". Prints "REPO@REV commit C -> DIR" for each on
// stdout and progress on stderr. Returns 0 when all arrived, 2 for an invalid reference (nothing
// fetched), 1 when any pull failed (each failure printed with its reason).
int PullCommand(const std::vector<std::string>& references,
                const model_store::HubSettings& settings);

}  // namespace embedding::client
