// Mirrors torch/nn/attention/__init__.py (sdpa_kernel) and ATen/Context.cpp's setSDP*Enabled.
#include "ops/sdpa_kernel.h"

#include "engine/core/error.h"

namespace remat {

namespace {
unsigned bit(SDPBackend b) { return 1u << static_cast<unsigned>(b); }
thread_local unsigned tls_enabled = bit(SDPBackend::MATH);
}  // namespace

const char* toString(SDPBackend backend) {
  switch (backend) {
    case SDPBackend::MATH: return "MATH";
    case SDPBackend::FLASH_ATTENTION: return "FLASH_ATTENTION";
  }
  return "?";
}

std::vector<SDPBackend> enabled_sdpa_backends() {
  std::vector<SDPBackend> out;
  for (SDPBackend b : {SDPBackend::FLASH_ATTENTION, SDPBackend::MATH})
    if (tls_enabled & bit(b)) out.push_back(b);
  return out;
}

sdpa_kernel::sdpa_kernel(SDPBackend backend) : previous_(tls_enabled) { tls_enabled = bit(backend); }

sdpa_kernel::sdpa_kernel(std::vector<SDPBackend> backends) : previous_(tls_enabled) {
  REMAT_CHECK(!backends.empty(), "sdpa_kernel: expected at least one backend (MATH, FLASH_ATTENTION), got none");
  unsigned enabled = 0;
  for (SDPBackend b : backends) enabled |= bit(b);
  tls_enabled = enabled;
}

sdpa_kernel::~sdpa_kernel() { tls_enabled = previous_; }

}  // namespace remat
