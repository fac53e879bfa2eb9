#include "model_store/text/window_tokens.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

// The first piece's bytes per wanted token: English runs 4 to 5 bytes a token, so two pieces
// usually suffice; text with longer tokens (CJK is 3 bytes a token, URLs and hostile runs more)
// doubles the piece until it holds the window.
constexpr size_t kBytesPerToken = 8;
constexpr size_t kMinPieceBytes = 1024;

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The piece of `text` of about `bytes` from its start (or end), cut at a character boundary:
// [begin, end) in the text's bytes.
std::pair<size_t, size_t> Piece(std::string_view text, size_t bytes, bool keep_end) {
  if (bytes >= text.size()) return {0, text.size()};
  if (keep_end) {
    size_t begin = text.size() - bytes;
    while (begin < text.size() && IsContinuationByte(text[begin])) ++begin;
    return {begin, text.size()};
  }
  size_t end = bytes;
  while (end > 0 && IsContinuationByte(text[end])) --end;
  return {0, end};
}

// The piece's tokens, spans moved to the whole text's bytes.
absl::StatusOr<TokenizedText> TokenizePiece(const Tokenizer& tokenizer, std::string_view text,
                                            std::pair<size_t, size_t> piece,
                                            absl::string_view field) {
  ASSIGN_OR_RETURN(TokenizedText tokens,
                   tokenizer.Tokenize(text.substr(piece.first, piece.second - piece.first), field));
  const auto shift = static_cast<uint32_t>(piece.first);
  if (shift > 0) {
    for (TextSpan& span : tokens.spans) {
      span.begin += shift;
      span.end += shift;
    }
  }
  return tokens;
}

// The window's `count` tokens of `tokens`: its first ones, or its last for keep_end.
TokenizedText Window(const TokenizedText& tokens, size_t count, bool keep_end) {
  count = std::min(count, tokens.ids.size());
  const size_t from = keep_end ? tokens.ids.size() - count : 0;
  TokenizedText out;
  out.ids.assign(tokens.ids.begin() + from, tokens.ids.begin() + from + count);
  out.spans.assign(tokens.spans.begin() + from, tokens.spans.begin() + from + count);
  return out;
}

bool SameTokens(const TokenizedText& a, const TokenizedText& b) {
  if (a.ids != b.ids) return false;
  for (size_t i = 0; i < a.spans.size(); ++i)
    if (a.spans[i].begin != b.spans[i].begin || a.spans[i].end != b.spans[i].end) return false;
  return true;
}

}  // namespace

absl::StatusOr<WindowTokens> TokenizeWindow(const Tokenizer& tokenizer, std::string_view text,
                                            size_t max_tokens, bool keep_end,
                                            absl::string_view field) {
  // The whole text is checked (a fast scan), so a document is refused alike at any strategy.
  RETURN_IF_ERROR(ValidateUtf8(text, field));
  auto piece = Piece(text, std::max(kMinPieceBytes, max_tokens * kBytesPerToken), keep_end);
  ASSIGN_OR_RETURN(TokenizedText shorter, TokenizePiece(tokenizer, text, piece, field));
  for (;;) {
    if (piece.second - piece.first == text.size())
      return WindowTokens{Window(shorter, max_tokens, keep_end), shorter.ids.size() > max_tokens};
    const auto longer_piece = Piece(text, 2 * (piece.second - piece.first), keep_end);
    ASSIGN_OR_RETURN(TokenizedText longer, TokenizePiece(tokenizer, text, longer_piece, field));
    TokenizedText window = Window(longer, max_tokens, keep_end);
    // Both hold more than the window, and agree on it: the window is settled.
    if (shorter.ids.size() > max_tokens && longer.ids.size() > max_tokens &&
        SameTokens(Window(shorter, max_tokens, keep_end), window)) {
      return WindowTokens{std::move(window), true};
    }
    piece = longer_piece;
    shorter = std::move(longer);
  }
}

}  // namespace embedding::model_store
