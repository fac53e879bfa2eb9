#include "model_store/formats/pooling.h"

#include "common/name_table.h"

namespace embedding::model_store {

// kLastToken's name is TEI's.
constexpr NamedValue<PoolingMode> kPoolingNames[] = {{PoolingMode::kCls, "cls"},
                                                     {PoolingMode::kMean, "mean"},
                                                     {PoolingMode::kMax, "max"},
                                                     {PoolingMode::kLastToken, "last_token"}};

const char* PoolingModeName(PoolingMode mode) { return NameOf(kPoolingNames, mode); }

}  // namespace embedding::model_store
