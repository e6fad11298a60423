// Tests ops/linalg_defs.h: mm, bmm and addmm get their schemas and their CPU and Meta kernels from
// their Defs, every backend runs the Def's meta function (the Meta kernel raises the CPU kernel's
// errors), and a Meta dry run makes the CPU GEMM's operand copies from the plan the CPU kernel
// makes them by (ops/gemm_copies.h).
#include <catch2/catch.hpp>

#include <vector>

#include "ops/linalg_defs.h"
#include "remat.h"
#include "tests/testing/linalg_cases.h"
#include "tests/testing/op_testing.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

namespace {

// [2, sizes...]
Shape batched(const Shape& sizes) {
  Shape s{2};
  s.insert(s.end(), sizes.begin(), sizes.end());
  return s;
}

}  // namespace

TEST_CASE("every Def of ops/linalg_defs.h has its schema and CPU and Meta kernels", "[linalg][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_linalg_def(f); }, {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 3);
}

TEST_CASE("the matrix products' Meta kernels raise the CPU kernels' errors, naming the op", "[linalg][structured]") {
  struct Case {
    const char* what;
    Shape a, b;
    ScalarType dtype;
  };
  const std::vector<Case> cases = {
      {"shapes", {2, 3}, {4, 5}, kFloat}, {"integers", {2, 3}, {3, 2}, kLong}, {"ranks", {2, 3, 4}, {4, 5}, kFloat}};
  for (const Case& c : cases) {
    INFO(c.what);
    for (auto [name, call] : std::vector<std::pair<const char*, Tensor (*)(Device, const Case&)>>{
             {"aten::mm", [](Device d, const Case& k) { return mm(on(d, k.a, k.dtype), on(d, k.b, k.dtype)); }},
             {"aten::bmm",
              [](Device d, const Case& k) {
                return bmm(on(d, batched(k.a), k.dtype), on(d, batched(k.b), k.dtype));
              }},
             {"aten::addmm",
              [](Device d, const Case& k) {
                return addmm(on(d, {k.b.back()}, k.dtype), on(d, k.a, k.dtype), on(d, k.b, k.dtype));
              }}}) {
      INFO(name);
      const std::string on_cpu = error_of([&] { call(Device{kCPU}, c); });
      CHECK_THAT(on_cpu, Catch::StartsWith(name));
      CHECK(error_of([&] { call(Device{kMeta}, c); }) == on_cpu);
    }
  }
}

TEST_CASE("a Meta dry run counting like the CPU makes the CPU GEMM's copies, event by event", "[linalg][structured]") {
  check_meta_allocates_as(Device{kCPU}, gemm_cases());
}

TEST_CASE("the CPU GEMM copies an operand exactly when its plan says so", "[linalg][structured]") {
  const Device cpu{kCPU};
  const Tensor a = expand(on(cpu, {1, 8}), {6, 8}), dense_a = contiguous(a), b = on(cpu, {8, 5});
  // the output, the plan's copy of a and its free when the kernel returns; the output alone
  const std::vector<int64_t> copied = allocation_deltas(cpu, kCPU, [&](Device) { Tensor out = mm(a, b); });
  const std::vector<int64_t> plain = allocation_deltas(cpu, kCPU, [&](Device) { Tensor out = mm(dense_a, b); });
  CHECK(ops::cpu_gemm_copies(empty({6, 5}), a, b).size == 1);
  CHECK(copied.size() == plain.size() + 2);
}
