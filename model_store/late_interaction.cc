#include "model_store/late_interaction.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

using Json = nlohmann::json;

// The tokenizer's mask token, as transformers reads it: tokenizer_config.json's mask_token
// (a string or {"content": ...}), else BERT's and RoBERTa's spellings. -1 when none is a token.
int32_t MaskTokenId(const std::string& model_dir, const Tokenizer& tokenizer) {
  std::vector<std::string> names;
  std::ifstream in(std::filesystem::path(model_dir) / "tokenizer_config.json");
  const Json settings = in ? Json::parse(in, nullptr, /*allow_exceptions=*/false) : Json();
  if (settings.is_object() && settings.contains("mask_token")) {
    const Json& mask = settings["mask_token"];
    if (mask.is_string()) names.push_back(mask.get<std::string>());
    if (mask.is_object() && mask.value("content", Json()).is_string())
      names.push_back(mask["content"].get<std::string>());
  }
  names.insert(names.end(), {"[MASK]", "<mask>"});
  for (const std::string& name : names) {
    if (const int32_t id = tokenizer.TokenToId(name); id >= 0) return id;
  }
  return -1;
}

}  // namespace

absl::StatusOr<LateInteraction> LateInteraction::Resolve(const LateInteractionConfig& config,
                                                         const std::string& model_dir,
                                                         const Tokenizer& tokenizer) {
  LateInteraction late;
  late.config_ = config;
  const std::vector<int32_t>& prefix = tokenizer.config().prefix_ids;
  if (prefix.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.layout,
                     ": the marker goes after the tokenizer's first special token, and "
                     "tokenizer.json's post-processor puts none before a text"));
  }
  for (auto [marker, field, out] :
       {std::tuple{&config.query_prefix, "query_prefix", &late.query_prefix_},
        std::tuple{&config.document_prefix, "document_prefix", &late.document_prefix_}}) {
    *out = prefix;
    if (marker->empty()) continue;  // "" adds no marker
    const int32_t id = tokenizer.TokenToId(*marker);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(config.layout, ": ", field, " '",
                                                     marker->substr(0, 40),
                                                     "' is not a token of the vocabulary"));
    }
    out->insert(out->begin() + 1, id);
  }
  late.suffix_ = tokenizer.config().suffix_ids;
  for (auto [length, field, prefix_size] :
       {std::tuple{config.query_length, "query_length", late.query_prefix_.size()},
        std::tuple{config.document_length, "document_length", late.document_prefix_.size()}}) {
    const auto specials = static_cast<int64_t>(prefix_size + late.suffix_.size());
    if (length <= specials) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.layout, ": ", field, " ", length, " leaves no token for text after ",
                       specials, " special tokens; allowed [", specials + 1, ", ...]"));
    }
  }
  if (config.do_query_expansion) {
    late.expansion_id_ = MaskTokenId(model_dir, tokenizer);
    if (late.expansion_id_ < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.layout,
                       ": do_query_expansion pads queries with the mask token, and the "
                       "vocabulary has none (tokenizer_config.json mask_token, [MASK], <mask>)"));
    }
  }
  // convert_tokens_to_ids: a word outside the vocabulary is the unknown token's id.
  for (const std::string& word : config.skiplist_words) {
    const int32_t id = tokenizer.TokenToId(word);
    if (id >= 0 || tokenizer.config().unk_id >= 0)
      late.skiplist_ids_.push_back(id >= 0 ? id : tokenizer.config().unk_id);
  }
  std::sort(late.skiplist_ids_.begin(), late.skiplist_ids_.end());
  return late;
}

int64_t LateInteraction::query_content_tokens() const {
  return config_.query_length - static_cast<int64_t>(query_prefix_.size() + suffix_.size());
}

int64_t LateInteraction::document_content_tokens() const {
  return config_.document_length - static_cast<int64_t>(document_prefix_.size() + suffix_.size());
}

RoleSequence LateInteraction::Sequence(InputRole role, const std::vector<int32_t>& content) const {
  RoleSequence out;
  out.ids = prefix(role);
  out.ids.insert(out.ids.end(), content.begin(), content.end());
  out.ids.insert(out.ids.end(), suffix_.begin(), suffix_.end());
  if (role == InputRole::kQuery && config_.do_query_expansion) {
    const auto text = static_cast<int32_t>(out.ids.size());
    if (text < config_.query_length) {
      out.ids.resize(config_.query_length, expansion_id_);
      if (!config_.attend_to_expansion_tokens) out.attended = text;
    }
  }
  return out;
}

bool LateInteraction::Skipped(int32_t id) const {
  return std::binary_search(skiplist_ids_.begin(), skiplist_ids_.end(), id);
}

}  // namespace embedding::model_store
