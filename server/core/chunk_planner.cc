#include "server/core/chunk_planner.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace embedding::server {

std::vector<Span> SplitRanges(uint32_t tokens, uint32_t size, uint32_t overlap) {
  if (tokens <= size) return {{0, tokens}};
  std::vector<Span> ranges;
  const uint32_t stride = size - overlap;
  for (uint32_t start = 0;; start += stride) {
    ranges.push_back({start, std::min(start + size, tokens)});
    if (start + size >= tokens) break;
  }
  return ranges;
}

namespace {

// Windows of `window` tokens overlapping by a quarter, the last aligned to the document end
// so every window is full; tokens take their states from the window they are most central in.
void PlanLateChunkingWindows(uint32_t tokens, uint32_t window, ChunkPlan* plan) {
  if (tokens <= window) {
    plan->sequences = {{0, tokens}};
  } else {
    const uint32_t stride = std::max<uint32_t>(1, window - window / 4);
    for (uint32_t start = 0;; start += stride) {
      const uint32_t begin = std::min(start, tokens - window);
      plan->sequences.push_back({begin, begin + window});
      if (begin + window >= tokens) break;
    }
  }
  plan->token_window.resize(tokens);
  size_t w = 0;
  for (uint32_t t = 0; t < tokens; ++t) {
    // Windows start in increasing order, so the best window index never decreases.
    auto margin = [&](size_t i) {
      const auto& r = plan->sequences[i];
      return std::min<int64_t>(int64_t{t} - r.begin, int64_t{r.end} - 1 - t);
    };
    while (w + 1 < plan->sequences.size() && plan->sequences[w + 1].begin <= t &&
           margin(w + 1) >= margin(w)) {
      ++w;
    }
    plan->token_window[t] = static_cast<uint32_t>(w);
  }
}

}  // namespace

absl::StatusOr<ChunkPlan> PlanChunks(uint32_t tokens, uint32_t window, const EmbedParams& params,
                                     const std::string& field) {
  ChunkPlan plan;
  switch (params.traits.plan) {
    case PlanRule::kReject:
      if (tokens > window) {
        absl::Status past = absl::InvalidArgumentError(
            absl::StrCat(field, ": ", tokens, " tokens exceed the model's window of ", window,
                         " tokens; allowed [0, ", window, "] when long text is refused"));
        past.SetPayload(kPastWindowPayload, absl::Cord());
        return past;
      }
      plan.chunks = {{0, tokens}};
      break;
    case PlanRule::kTruncate:
      plan.truncated = tokens > window;
      if (!plan.truncated) {
        plan.chunks = {{0, tokens}};
      } else {
        plan.chunks = {params.keep_end ? Span{tokens - window, tokens} : Span{0, window}};
      }
      break;
    case PlanRule::kChunks:
      plan.chunks = SplitRanges(tokens, params.chunk_tokens, params.overlap_tokens);
      break;
    case PlanRule::kLateWindows:
      plan.chunks = SplitRanges(tokens, params.chunk_tokens, params.overlap_tokens);
      PlanLateChunkingWindows(tokens, window, &plan);
      return plan;
  }
  plan.sequences = plan.chunks;
  return plan;
}

}  // namespace embedding::server
