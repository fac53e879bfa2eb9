// A lower layer including a higher one: check_layering.cmake must refuse it.
#include "model_store/high/above.h"
#include "model_store/low/beside.h"
