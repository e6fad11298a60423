// remat's module scope path (no PyTorch counterpart; the closest is the FQN of an nn.Module,
// which PyTorch's selective checkpoint policies cannot see).
//
//   { scope s("layers"); { scope t("3"); { scope u("mlp"); { scope v("fc2");
//       current_scope();   // "layers.3.mlp.fc2"
//   }}}}
//
// Every op call in a selective-checkpoint region is known by (scope path, op, occurrence), so
// a policy can say "save every mm except the one under *.mlp.fc2". nn::Module pushes its name
// around each forward.
#pragma once

#include <string>
#include <vector>

namespace remat {

class scope {
 public:
  explicit scope(std::string name);
  ~scope();
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
};

// The thread's current scope path, names joined by '.' ("" at top level).
std::string current_scope();
// The path as a list of names.
const std::vector<std::string>& current_scope_names();

// Glob match on a scope path: '*' matches any run of characters, '?' one character.
bool scope_matches(const std::string& pattern, const std::string& path);

}  // namespace remat
