// Mirrors c10/core/impl/LocalDispatchKeySet.h: per-thread keys to add to or remove from every
// call's key set, with RAII guards.
#pragma once

#include "engine/core/dispatch_key_set.h"

namespace remat {

struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};

namespace detail {
inline thread_local LocalDispatchKeySet tls_key_set;  // trivially constructed: no TLS init guard
}
inline LocalDispatchKeySet& tls_local_dispatch_key_set() { return detail::tls_key_set; }

// Adds a key to the thread's included set for the guard's lifetime.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKey k)
      : tls_(tls_local_dispatch_key_set()), saved_(tls_.included) {
    tls_.included = tls_.included.add(k);
  }
  ~IncludeDispatchKeyGuard() { tls_.included = saved_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
  DispatchKeySet saved_;
};

// Adds keys to the thread's excluded set for the guard's lifetime (e.g. "below autograd").
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys)
      : tls_(tls_local_dispatch_key_set()), saved_(tls_.excluded) {
    tls_.excluded = tls_.excluded | keys;
  }
  explicit ExcludeDispatchKeyGuard(DispatchKey k) : ExcludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ~ExcludeDispatchKeyGuard() { tls_.excluded = saved_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
  DispatchKeySet saved_;
};

// Saves and restores the whole thread-local key state (used where a region must run with a
// captured state, e.g. a backward pass started from inside a dispatch mode).
class LocalDispatchKeySetGuard {
 public:
  LocalDispatchKeySetGuard() : tls_(tls_local_dispatch_key_set()), saved_(tls_) {}
  ~LocalDispatchKeySetGuard() { tls_ = saved_; }
  LocalDispatchKeySetGuard(const LocalDispatchKeySetGuard&) = delete;
  LocalDispatchKeySetGuard& operator=(const LocalDispatchKeySetGuard&) = delete;

 private:
  LocalDispatchKeySet& tls_;
  LocalDispatchKeySet saved_;
};

}  // namespace remat
