// Mirrors c10's OutOfMemoryError message ("Tried to allocate N bytes") for what remat's allocators
// do not allocate: a std::string or std::vector whose size is known before it grows, e.g. a file
// read into memory. Header-only, free of the rest of remat but for error.h.
#pragma once

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include <unistd.h>

#include "engine/core/error.h"

namespace remat {

// The message: "out of memory: needed 1099511627776 bytes for the contents of 'big.safetensors'".
inline std::string out_of_memory_message(uint64_t bytes, const std::string& what) {
  return "out of memory: needed " + std::to_string(bytes) + " bytes for " + what;
}

// f() (e.g. a reserve of `bytes` bytes), with the std::bad_alloc it throws (or the
// std::length_error of a size past max_size()) reported as remat::Error out_of_memory_message.
template <class F>
decltype(auto) needing_bytes(uint64_t bytes, const std::string& what, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    throw Error(out_of_memory_message(bytes, what));
  } catch (const std::length_error&) {
    throw Error(out_of_memory_message(bytes, what));
  }
}

// This machine's physical memory in bytes (0 if the system does not say).
inline uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// Refuses, before anything is allocated, a buffer larger than this machine's physical memory
// (the allocation would fail, or swap without end): "out of memory: needed N bytes for X, more
// than this machine's M bytes of memory".
inline void check_fits_in_memory(uint64_t bytes, const std::string& what) {
  const uint64_t memory = physical_memory_bytes();
  if (memory > 0 && bytes > memory)
    throw Error(out_of_memory_message(bytes, what) + ", more than this machine's " + std::to_string(memory) +
                " bytes of memory");
}

}  // namespace remat
