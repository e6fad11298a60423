// Tests ops/factory_defs.h: uniform_ and normal_ get their schemas (nondeterministic_seeded) and
// their CPU and Meta kernels from their Defs; the Meta kernels raise the CPU kernels' errors and
// advance an explicit generator as they do, an empty self included; and a Meta dry run allocates
// what the CPU fills allocate, event by event (the contiguous buffer of a strided self, which the
// Meta kernels once left out).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/factory_defs.h"
#include "remat.h"
#include "tests/testing/factory_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/factory_defs.h has its schema and CPU and Meta kernels", "[factory][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_factory_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 2);
  ops::for_each_factory_def([](auto def) {
    using Def = typename decltype(def)::type;
    INFO(Def::inplace_name);
    CHECK(find_op(Def::inplace_name).schema().has_tag(Tag::nondeterministic_seeded));
  });
}

TEST_CASE("the random fills' Meta kernels raise the CPU kernels' errors, naming the op", "[factory][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"uniform_ of integers", "aten::uniform_", [](Device d) { Tensor t = on(d, {3}, kLong); uniform_(t, 0.0, 1.0, nullptr); }},
      {"uniform_ with from > to", "aten::uniform_", [](Device d) { Tensor t = on(d, {3}); uniform_(t, 2.0, 1.0, nullptr); }},
      {"normal_ with std < 0", "aten::normal_", [](Device d) { Tensor t = on(d, {3}); normal_(t, 0.0, -1.0, nullptr); }},
      {"normal_ of an expanded tensor", "aten::normal_",
       [](Device d) { Tensor t = expand(on(d, {1, 3}), {2, 3}); normal_(t, 0.0, 1.0, nullptr); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("the random fills advance an explicit generator by one on every backend, an empty self too",
          "[factory][structured]") {
  for (Device d : {Device{kCPU}, Device{kMeta}}) {
    INFO(d);
    Generator g(3);
    Tensor empty = on(d, {0}), t = on(d, {4});
    uniform_(empty, 0.0, 1.0, &g);
    normal_(t, 0.0, 1.0, &g);
    CHECK(g.offset() == 2);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU random fills allocate, event by event",
          "[factory][structured]") {
  check_meta_allocates_as(Device{kCPU}, factory_cases());
}
