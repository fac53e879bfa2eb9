// `embedctl batch submit|status|wait|download`: a corpus through the server's Batch API
// (OpenAI's Files and Batches, on --openai-listen) over HTTP, with a progress bar when stderr
// is a terminal. The same routes OpenAI's SDKs call; nothing here a curl could not do.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace embedding::client {

struct BatchCommandOptions {
  std::string api_url = "http://127.0.0.1:8000";  // --api_url: the server's --openai-listen
  std::string token;                              // --token
  std::string out_dir = ".";                      // download: where the two files go
  absl::Duration poll = absl::Seconds(1);         // wait: between two reads of the batch
  bool wait = false;                              // submit: then wait
};

// `args` after "batch": submit FILE | status ID | wait ID | download ID. Prints the batch
// object (JSON, one line) on stdout; download prints the paths it wrote. Returns 0 on success
// (wait: the batch completed), 1 when a call failed or the batch ended otherwise (its status
// and errors printed), 2 for a usage error.
int BatchCommand(const std::vector<std::string>& args, const BatchCommandOptions& options);

}  // namespace embedding::client
