// The thread-local scope path (see scope_path.h).
#include "engine/core/scope_path.h"

namespace remat {

namespace {
thread_local std::vector<std::string> tls_scope;
}

void push_scope_name(std::string name) { tls_scope.push_back(std::move(name)); }
void pop_scope_name() { tls_scope.pop_back(); }

std::string scope_path() {
  std::string path;
  for (const std::string& n : tls_scope) {
    if (n.empty()) continue;
    if (!path.empty()) path += '.';
    path += n;
  }
  return path;
}

const std::vector<std::string>& scope_path_names() { return tls_scope; }

void set_scope_path_names(std::vector<std::string> names) { tls_scope = std::move(names); }

}  // namespace remat
