// OpenAI's Files and Batches API on the API listener, over a BatchStore:
//   POST   /v1/files                 multipart: purpose ("batch") and file
//   GET    /v1/files                 ?purpose, limit, after, order
//   GET    /v1/files/{id}            the File object
//   GET    /v1/files/{id}/content    its bytes
//   DELETE /v1/files/{id}
//   POST   /v1/batches               input_file_id, endpoint, completion_window, metadata
//   GET    /v1/batches               ?limit, after
//   GET    /v1/batches/{id}
//   POST   /v1/batches/{id}/cancel
// Each route checks the bearer token on the listener's thread and does its disk work on a
// thread of its own, so a slow disk never stalls the event loop. Errors are OpenAI error
// objects, with the one status-to-HTTP rule (api_call.h).
#pragma once

#include "server/batch/batch_runner.h"
#include "server/batch/batch_store.h"
#include "server/core/worker_pool.h"
#include "server/http/api_call.h"
#include "server/http/http_listener.h"

namespace embedding::server {

class BatchApi {
 public:
  // Everything passed must outlive the listener the routes are added to.
  BatchApi(BatchStore* store, BatchRunner* runner, const ApiContext& context);

  // Adds the routes, and the upload body limit (--batch-max-file-bytes and the form's
  // headers) on POST /v1/files.
  void AddRoutes(HttpListener& listener);

 private:
  using Work = std::function<absl::StatusOr<HttpResponse>(const HttpExchange&)>;
  // The bearer check, then `work` on the disk thread, then its answer or error.
  void Serve(std::shared_ptr<HttpExchange> exchange, Work work);
  absl::StatusOr<HttpResponse> Upload(const HttpExchange& exchange);
  absl::StatusOr<HttpResponse> FileRoute(const HttpExchange& exchange);
  absl::StatusOr<HttpResponse> CreateBatch(const HttpExchange& exchange);
  absl::StatusOr<HttpResponse> BatchRoute(const HttpExchange& exchange);

  BatchStore* const store_;
  BatchRunner* const runner_;
  const ApiContext context_;
  WorkerPool disk_{1};
};

}  // namespace embedding::server
