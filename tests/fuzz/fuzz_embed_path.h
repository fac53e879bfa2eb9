// What the request fuzz targets share: a small demo model written once per process, the
// bounds they parse under, and the path a parsed Embed call takes before the model runs
// (validate, tokenise each input as the job would, plan its chunks; any plan must cover the
// document inside the model's window, else the process aborts).
#pragma once

#include "model_store/model.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"

namespace embedding::fuzzing {

// A one-layer demo model with a 128-token window. Small bounds, so that the fuzzer reaches
// every limit quickly.
const model_store::Model& DemoModel();
server::RequestLimits Limits();

// Validates `call` against DemoModel() and plans each input; aborts on a plan that breaks
// its invariants.
void EmbedPath(const server::EmbedCall& call);

}  // namespace embedding::fuzzing
