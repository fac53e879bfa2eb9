// What the core tells its observers (metrics, the request log): every finished call from
// either door, and every successful Embed with its result. Observers include this header,
// never a door or the Embedder.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"
#include "server/core/score_call.h"

namespace embedding::server {

struct ServedModel;

// A finished call, as the log and the metrics see it.
struct CallRecord {
  const char* method = "";  // "Embed", "EmbedStream", "OpenAI/Embeddings", ...
  std::string request_id;
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;  // the status message the client got ("" on success)
  double seconds = 0;
  // Body fields the route ignored (TEI's routes ignore fields they do not know).
  std::vector<std::string> ignored_fields;
};

// Every member may be empty. Called on the thread that finished the call; must be thread-safe.
struct CallObserver {
  std::function<void(const CallRecord& call)> on_call_done;
  std::function<void(const ServedModel& model, const EmbedParams& params,
                     const EmbedResult& result)>
      on_embedded;
  std::function<void(const ServedModel& model, const ScoreAnswer& answer)> on_scored;
};

}  // namespace embedding::server
