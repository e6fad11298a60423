// Mirrors torch/csrc/api/include/torch/version.h.in (the version compiled into the library).
#include "engine/core/version.h"

namespace remat {

const char* version() { return REMAT_VERSION; }

}  // namespace remat
