// The order in which the emulated device runs a block's threads between two barriers
// (REMAT_CUDA_EMU_SCHEDULE). No CUDA counterpart: a GPU gives no order at all, so a kernel whose
// result depends on one has a race; running it under several orders shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace remat::cuda_emu {

struct Schedule {
  enum class Kind { Forward, Reverse, Random };
  Kind kind = Kind::Forward;
  uint64_t seed = 0;  // Random only
  std::string name() const;  // "forward", "reverse", "random:7"
};

// "forward", "reverse", "random:SEED", or several of them comma-separated ("forward,reverse"):
// each launch then runs under each, from the same device memory, and must leave the same bytes.
// Throws remat::Error naming the bad entry.
std::vector<Schedule> parse_schedules(const std::string& spec);

// The schedules launches run under: REMAT_CUDA_EMU_SCHEDULE, parsed on first use (unset or
// empty: forward), unless set_schedules replaced them.
std::vector<Schedule> schedules();
// Replaces the schedules for launches that run from now on (tests and tools; synchronise first).
void set_schedules(std::vector<Schedule> schedules);

}  // namespace remat::cuda_emu
