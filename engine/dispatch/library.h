// Mirrors torch/library.h: TORCH_LIBRARY / TORCH_LIBRARY_IMPL registration blocks.
//
//   REMAT_LIBRARY_FRAGMENT(aten, m) { m.def("mm(Tensor self, Tensor mat2) -> Tensor"); }
//   REMAT_LIBRARY_IMPL(aten, CPU, m) { m.impl("mm", REMAT_FN(mm_cpu)); }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/dispatch/dispatcher.h"

namespace remat {

class Library {
 public:
  Library(std::string ns, std::optional<DispatchKey> key) : ns_(std::move(ns)), key_(key) {}

  // Defines an op from its schema; the name is qualified with the library's namespace.
  Library& def(const std::string& schema, std::vector<Tag> tags = {});
  // Registers a kernel for the library's dispatch key (or an explicit one).
  Library& impl(const std::string& name, KernelFunction kernel);
  Library& impl(const std::string& name, DispatchKey key, KernelFunction kernel);
  // A kernel for every op at this library's key that has none of its own.
  Library& fallback(KernelFunction kernel);

  std::string qualify(const std::string& name) const;

 private:
  std::string ns_;
  std::optional<DispatchKey> key_;
};

namespace detail {
struct LibraryInit {
  LibraryInit(void (*fn)(Library&), const char* ns, std::optional<DispatchKey> key) {
    Library lib(ns, key);
    fn(lib);
  }
};
}  // namespace detail

}  // namespace remat

#define REMAT_CONCAT_INNER(a, b) a##b
#define REMAT_CONCAT(a, b) REMAT_CONCAT_INNER(a, b)
#define REMAT_UID(prefix) REMAT_CONCAT(prefix, __COUNTER__)

#define REMAT_LIBRARY_IMPL_INTERNAL(ns, key, m, uid)                                               \
  static void REMAT_CONCAT(remat_library_init_, uid)(::remat::Library&);                         \
  static const ::remat::detail::LibraryInit REMAT_CONCAT(remat_library_static_, uid)(            \
      &REMAT_CONCAT(remat_library_init_, uid), #ns, key);                                          \
  static void REMAT_CONCAT(remat_library_init_, uid)(::remat::Library & m)

// Defines ops in namespace ns (may appear in many files).
#define REMAT_LIBRARY_FRAGMENT(ns, m) REMAT_LIBRARY_IMPL_INTERNAL(ns, std::nullopt, m, __COUNTER__)
// Registers kernels of namespace ns for one dispatch key (CPU, CUDA, Meta, Autograd, Autocast).
#define REMAT_LIBRARY_IMPL(ns, key, m) \
  REMAT_LIBRARY_IMPL_INTERNAL(ns, ::remat::DispatchKey::key, m, __COUNTER__)
