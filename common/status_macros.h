// Two small macros for absl::Status propagation, shared by model_store, server and client.
// Debian's abseil (20220623) ships no public RETURN_IF_ERROR, so the project keeps its own.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define EMB_CONCAT_INNER_(a, b) a##b
#define EMB_CONCAT_(a, b) EMB_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    const ::absl::Status emb_status_ = (expr); \
    if (!emb_status_.ok()) return emb_status_; \
  } while (0)

// Evaluates a StatusOr expression; on error returns its status, else moves the value into `lhs`.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(EMB_CONCAT_(emb_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
