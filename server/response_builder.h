// Converts pipeline results and model descriptions into protobuf messages.
#pragma once

#include "embedding/v1/embedding.pb.h"
#include "server/embed_result.h"
#include "server/model_registry.h"

namespace embedding::server {

void FillEmbedResponse(const ServedModel& model, Strategy strategy, const EmbedResult& result,
                       v1::EmbedResponse* response);

void FillModelInfo(const ServedModel& model, const RequestLimits& limits, v1::ModelInfo* info);

// Tokenize's answer for one input: content tokens, wrapped in special tokens if asked.
void FillTokenizedInput(const model_store::Model& model, const std::string& text,
                        const model_store::TokenizedText& tokens, bool add_special_tokens,
                        v1::TokenizedInput* out);

}  // namespace embedding::server
