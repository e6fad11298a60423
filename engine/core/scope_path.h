// Mirrors the name stack of torch.autograd.profiler.record_function: the thread's path of
// module names, kept by the engine so that its memory tracker can read it without knowing
// checkpoint/ or nn/ (checkpoint/scope.h is the public face: remat::scope, current_scope()).
#pragma once

#include <string>
#include <vector>

namespace remat {

void push_scope_name(std::string name);
void pop_scope_name();
// The names joined by '.', empty names skipped ("" at top level).
std::string scope_path();
const std::vector<std::string>& scope_path_names();
// Replaces the thread's names (what a caller that must leave the path as it found it restores).
void set_scope_path_names(std::vector<std::string> names);

}  // namespace remat
