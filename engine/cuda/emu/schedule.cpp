// REMAT_CUDA_EMU_SCHEDULE: see schedule.h.
#include "engine/cuda/emu/schedule.h"

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "engine/core/error.h"

namespace remat::cuda_emu {

std::string Schedule::name() const {
  switch (kind) {
    case Kind::Forward: return "forward";
    case Kind::Reverse: return "reverse";
    case Kind::Random: return "random:" + std::to_string(seed);
  }
  return "?";
}

std::vector<Schedule> parse_schedules(const std::string& spec) {
  std::vector<Schedule> out;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    Schedule s;
    if (item == "forward") {
      s.kind = Schedule::Kind::Forward;
    } else if (item == "reverse") {
      s.kind = Schedule::Kind::Reverse;
    } else if (item.rfind("random:", 0) == 0 && item.size() > 7 &&
               item.find_first_not_of("0123456789", 7) == std::string::npos) {
      s.kind = Schedule::Kind::Random;
      s.seed = std::stoull(item.substr(7));
    } else {
      throw Error(detail::str("REMAT_CUDA_EMU_SCHEDULE: unknown schedule '", item, "' in '", spec,
                              "' (expected forward, reverse or random:SEED, comma-separated)"));
    }
    out.push_back(s);
    begin = end + 1;
  }
  return out;
}

namespace {

std::mutex schedules_mu;

std::vector<Schedule>& current() {
  static std::vector<Schedule>* parsed = [] {
    const char* env = std::getenv("REMAT_CUDA_EMU_SCHEDULE");
    try {
      return new std::vector<Schedule>(env != nullptr && *env != '\0' ? parse_schedules(env)
                                                                       : std::vector<Schedule>{Schedule{}});
    } catch (const Error& e) {
      std::cerr << e.what() << std::endl;
      std::abort();  // a misspelt schedule must not silently run the default one
    }
  }();
  return *parsed;
}

}  // namespace

std::vector<Schedule> schedules() {
  std::lock_guard<std::mutex> lock(schedules_mu);
  return current();
}

void set_schedules(std::vector<Schedule> schedules) {
  REMAT_CHECK(!schedules.empty(), "remat::cuda_emu::set_schedules: no schedule given");
  std::lock_guard<std::mutex> lock(schedules_mu);
  current() = std::move(schedules);
}

}  // namespace remat::cuda_emu
