// The thread-local scope path (see scope.h).
#include "checkpoint/scope.h"

#include "engine/core/scope_path.h"

namespace remat {

scope::scope(std::string name) { push_scope_name(std::move(name)); }
scope::~scope() { pop_scope_name(); }

std::string current_scope() { return scope_path(); }

const std::vector<std::string>& current_scope_names() { return scope_path_names(); }

bool scope_matches(const std::string& pattern, const std::string& path) {
  // Iterative glob with backtracking to the last '*'.
  size_t p = 0, s = 0, star = std::string::npos, mark = 0;
  while (s < path.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == path[s])) {
      ++p;
      ++s;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (star != std::string::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace remat
