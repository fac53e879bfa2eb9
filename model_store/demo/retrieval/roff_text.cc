#include "model_store/demo/retrieval/roff_text.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace embedding::model_store {
namespace {

// Requests whose arguments are text on the page.
bool IsTextMacro(absl::string_view name) {
  static const auto* const kText = new absl::flat_hash_set<absl::string_view>{
      "B", "I", "BR", "RB", "BI", "IB", "IR", "RI", "SB", "SM", "UR", "MT"};
  return kText->contains(name);
}

// Requests that start a new paragraph.
bool IsBreakMacro(absl::string_view name) {
  static const auto* const kBreak = new absl::flat_hash_set<absl::string_view>{
      "PP", "P", "LP", "SH", "SS", "TP", "IP", "HP", "TH", "RS", "RE", "TS"};
  return kBreak->contains(name);
}

// Skips an escape's name at `i`: one character, "(xx" or "[...]". Returns the index after it.
size_t SkipEscapeName(absl::string_view s, size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '(') return std::min(s.size(), i + 3);
  if (s[i] == '[') {
    const size_t close = s.find(']', i);
    return close == absl::string_view::npos ? s.size() : close + 1;
  }
  return i + 1;
}

// Text with escapes resolved: \- \e \(xx keep a character's worth of meaning (a hyphen, a
// backslash, a space), every other escape (fonts, sizes, strings, zero-width marks) goes.
std::string StripEscapes(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '\\') {
      out.push_back(s[i++]);
      continue;
    }
    if (i + 1 >= s.size()) break;  // a trailing backslash joins lines: nothing to keep
    const char kind = s[i + 1];
    i += 2;
    switch (kind) {
      case '-':
        out.push_back('-');
        break;
      case 'e':
      case '\\':
        out.push_back('\\');
        break;
      case '(':
      case '[':
        out.push_back(' ');  // a special character: a dash, a quote, a bullet
        i = SkipEscapeName(s, i - 1);
        break;
      case 'f':
      case '*':
      case 'n':
      case 'g':
        i = SkipEscapeName(s, i);
        break;
      case 's':
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        while (i < s.size() && absl::ascii_isdigit(s[i])) ++i;
        break;
      case '"':  // a comment to the end of the line
        i = s.size();
        break;
      default:  // \& \% \c \: \~ \0 \| \^ and the like: zero-width or a space
        if (kind == '~' || kind == '0' || kind == ' ') out.push_back(' ');
        break;
    }
  }
  return out;
}

// A request's arguments as words: double quotes group, and are dropped.
std::string MacroArguments(absl::string_view rest) {
  std::string out(rest);
  out.erase(std::remove(out.begin(), out.end(), '"'), out.end());
  return out;
}

}  // namespace

std::vector<std::string> RoffParagraphs(absl::string_view roff) {
  std::vector<std::string> paragraphs;
  std::string current;
  auto finish = [&] {
    std::vector<absl::string_view> words =
        absl::StrSplit(current, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!words.empty()) paragraphs.push_back(absl::StrJoin(words, " "));
    current.clear();
  };
  bool no_fill = false;
  for (absl::string_view line : absl::StrSplit(roff, '\n')) {
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] == '.' || line[0] == '\'') {
      const absl::string_view request = absl::StripLeadingAsciiWhitespace(line.substr(1));
      const size_t space = request.find_first_of(" \t");
      const absl::string_view name = request.substr(0, space);
      const absl::string_view rest =
          space == absl::string_view::npos ? absl::string_view() : request.substr(space + 1);
      if (name == "nf" || name == "EX") {
        finish();
        no_fill = true;
      } else if (name == "fi" || name == "EE") {
        no_fill = false;
      } else if (!no_fill && IsBreakMacro(name)) {
        finish();
        if (name == "SH" || name == "SS") {  // a heading is a paragraph of its own
          absl::StrAppend(&current, " ", StripEscapes(MacroArguments(rest)));
          finish();
        }
      } else if (!no_fill && IsTextMacro(name)) {
        absl::StrAppend(&current, " ", StripEscapes(MacroArguments(rest)));
      }
      continue;
    }
    if (!no_fill) absl::StrAppend(&current, " ", StripEscapes(line));
  }
  finish();
  return paragraphs;
}

}  // namespace embedding::model_store
