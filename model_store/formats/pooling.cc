#include "model_store/formats/pooling.h"

namespace embedding::model_store {

const char* PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kCls:
      return "cls";
    case PoolingMode::kMean:
      return "mean";
    case PoolingMode::kMax:
      return "max";
    case PoolingMode::kLastToken:
      return "last_token";  // TEI's name for it
  }
  return "?";
}

}  // namespace embedding::model_store
