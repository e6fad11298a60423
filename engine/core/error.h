// Mirrors c10/util/Exception.h (c10::Error, TORCH_CHECK).
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat {

// Every error remat reports is a remat::Error; messages name the op and the values.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class T>
void write(std::ostream& os, const T& x) {
  os << x;
}
// Shapes print as PyTorch prints them: [2, 3].
inline void write(std::ostream& os, const std::vector<int64_t>& shape) {
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
}
inline void append(std::ostringstream&) {}
template <class T, class... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  write(os, first);
  append(os, rest...);
}
template <class... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream os;
  append(os, parts...);
  return os.str();
}
}  // namespace detail

}  // namespace remat

// REMAT_CHECK(cond, "aten::mm: ", a, " vs ", b): throws remat::Error with the parts concatenated.
#define REMAT_CHECK(cond, ...)                                      \
  do {                                                              \
    if (__builtin_expect(!(cond), 0)) {                             \
      throw ::remat::Error(::remat::detail::str(__VA_ARGS__));      \
    }                                                               \
  } while (0)

// Invariants that only a bug in remat can break.
#define REMAT_INTERNAL_ASSERT(cond, ...)                                                    \
  REMAT_CHECK(cond, "internal assert failed at " __FILE__ ":", __LINE__, ": " #cond " ", \
              ##__VA_ARGS__)
