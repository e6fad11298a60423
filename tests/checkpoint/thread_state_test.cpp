// Tests checkpoint/thread_state.{h,cpp}: a snapshot of the thread's dispatch modes and keys,
// grad mode, saved-tensor hooks and scope path, restored whatever was changed since.
#include <catch2/catch.hpp>

#include "checkpoint/thread_state.h"
#include "engine/core/scope_path.h"
#include "remat.h"

using namespace remat;

namespace {
struct PassThrough : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    return op.call(args);
  }
};
}  // namespace

TEST_CASE("ThreadStateSnapshot: restore undoes what was left changed, and names it first", "[thread_state]") {
  auto outer_mode = std::make_shared<PassThrough>();
  DispatchModeGuard outer(outer_mode);
  scope s("model");
  const ThreadStateSnapshot before;
  CHECK(before.differences().empty());

  // What a step that threw midway, or that did not use guards, could leave behind.
  DispatchModeTLS::push(std::make_shared<PassThrough>());
  autograd::GradMode::set_enabled(false);
  autograd::SavedTensorDefaultHooks::push([](const Tensor& t) { return std::any(t); },
                                          [](const std::any& a) { return std::any_cast<Tensor>(a); });
  push_scope_name("layers");
  push_scope_name("3");
  tls_local_dispatch_key_set().excluded = tls_local_dispatch_key_set().excluded.add(DispatchKey::Autograd);

  const std::string differs = before.differences();
  CHECK_THAT(differs, Catch::Contains("dispatch modes (2, was 1)") && Catch::Contains("grad mode (off, was on)") &&
                          Catch::Contains("saved-tensor hooks") && Catch::Contains("scope path ('model.layers.3')") &&
                          Catch::Contains("dispatch keys"));
  before.restore();
  CHECK(before.differences().empty());
  CHECK(DispatchModeTLS::size() == 1);
  CHECK(DispatchModeTLS::stack()[0] == outer_mode);
  CHECK(autograd::GradMode::is_enabled());
  CHECK(!autograd::SavedTensorDefaultHooks::is_enabled());
  CHECK(current_scope() == "model");
  CHECK(!tls_local_dispatch_key_set().excluded.has(DispatchKey::Autograd));
  CHECK(tls_local_dispatch_key_set().included.has(DispatchKey::Python));  // the outer mode's key is back

  // Popped too far: the modes are put back as they were.
  DispatchModeTLS::pop();
  CHECK(DispatchModeTLS::size() == 0);
  before.restore();
  CHECK(DispatchModeTLS::size() == 1);
  CHECK(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
}
