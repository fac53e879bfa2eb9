// A higher layer including a lower one: allowed.
#include "model_store/low/beside.h"
