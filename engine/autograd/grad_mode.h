// Mirrors c10/core/GradMode.h and torch/csrc/autograd/grad_mode.h.
#pragma once

namespace remat::autograd {

namespace detail {
inline thread_local bool tls_grad_enabled = true;
}

struct GradMode {
  static bool is_enabled() { return detail::tls_grad_enabled; }
  static void set_enabled(bool enabled) { detail::tls_grad_enabled = enabled; }
};

// Sets grad mode for the guard's lifetime and restores the previous one.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

inline bool is_grad_enabled() { return GradMode::is_enabled(); }

}  // namespace remat::autograd
