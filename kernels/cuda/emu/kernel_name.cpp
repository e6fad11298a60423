// Kernel names for the emulated device's messages: see launch.h.
#include <string>

#include "kernels/cuda/emu/launch.h"

namespace remat::cuda_emu {

std::string kernel_name_from_signature(const char* pretty_function) {
  // GCC: "... [with auto Kernel = ns::kernel<float, 4>; F = ...]"; Clang: "... [Kernel = &ns::kernel<float, 4>]".
  std::string s(pretty_function);
  size_t begin = s.find("Kernel = ");
  if (begin == std::string::npos) return s;
  begin += 9;
  if (begin < s.size() && s[begin] == '&') ++begin;
  int depth = 0;
  size_t end = begin;
  for (; end < s.size(); ++end) {
    const char c = s[end];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && (c == ';' || c == ']')) break;
    if (depth < 0) break;
  }
  return s.substr(begin, end - begin);
}

}  // namespace remat::cuda_emu
