// Whose work a forward pass is: a caller waiting on a door, or a Batch API job, which takes
// only the time interactive work leaves (server/core/batcher.h).
#pragma once

namespace embedding::server {

enum class Priority { kInteractive, kBackground };

}  // namespace embedding::server
