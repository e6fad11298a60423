// The thread-local scope path (see scope.h).
#include "checkpoint/scope.h"

namespace remat {

namespace {
thread_local std::vector<std::string> tls_scope;
}

scope::scope(std::string name) { tls_scope.push_back(std::move(name)); }
scope::~scope() { tls_scope.pop_back(); }

std::string current_scope() {
  std::string path;
  for (const std::string& n : tls_scope) {
    if (n.empty()) continue;
    if (!path.empty()) path += '.';
    path += n;
  }
  return path;
}

const std::vector<std::string>& current_scope_names() { return tls_scope; }

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
