// The checks the drift tests of ops/*_defs.h share (no PyTorch counterpart; PyTorch's
// test_meta.py and test_fake_tensor.py compare the meta and real kernels the same way): a Def's
// op has the Def's schema and a kernel per backend; a backend and Meta raise the same error; a
// Meta dry run allocates what a backend allocates, event by event.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ops/structured.h"
#include "remat.h"

namespace remat::testing {

// The op `name` has the schema name + schema and a kernel for each of `keys`.
inline void check_schema_registered(const char* name, const char* schema, std::initializer_list<DispatchKey> keys) {
  INFO(name);
  OperatorHandle op = find_op(name);
  CHECK(op.schema().str() == std::string(name) + schema);
  for (DispatchKey k : keys) {
    INFO(toString(k));
    CHECK(op.entry()->hasKernelForKey(k));
  }
}

// The ops of Def (its functional and its in-place variant, those it has) are registered as the
// Def says, with a kernel for each of `keys`.
template <class Def>
void check_def_registered(std::initializer_list<DispatchKey> keys) {
  if constexpr (ops::structured::HasFunctional<Def>::value) check_schema_registered(Def::name, Def::schema, keys);
  if constexpr (ops::structured::HasInplace<Def>::value)
    check_schema_registered(Def::inplace_name, Def::inplace_schema, keys);
}

// check_def_registered for each Def that for_each (a for_each_*_def of ops/) walks; how many.
template <class ForEach>
int check_defs_registered(const ForEach& for_each, std::initializer_list<DispatchKey> keys) {
  int defs = 0;
  for_each([&](auto def) {
    ++defs;
    check_def_registered<typename decltype(def)::type>(keys);
  });
  return defs;
}

// The message `call` throws, or "" when it returns.
template <class F>
std::string error_of(const F& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// zeros on d (the temporaries depend on geometry and dtype alone).
inline Tensor on(Device d, const Shape& sizes, ScalarType dtype = kFloat) {
  return zeros(sizes, TensorOptions().dtype(dtype).device(d));
}

// An op call whose allocations a backend and a Meta dry run are compared on (run(device) makes
// its operands on device).
struct AllocationCase {
  const char* what;
  Tensor (*run)(Device);
};

// The allocations (+) and frees (-) of body(device) on `device`; on Meta, inside a dry run that
// counts like `imitated`.
template <class F>
std::vector<int64_t> allocation_deltas(Device device, DeviceType imitated, const F& body) {
  std::vector<int64_t> deltas;
  auto record = [&] {
    MemoryTracker tracker(device);
    body(device);
    for (const MemoryEvent& e : tracker.timeline()) deltas.push_back(e.delta);
  };
  if (device.is_meta()) {
    DryRun dry(imitated);
    record();
  } else {
    record();
  }
  return deltas;
}

// For each case: the allocations of the case on `device`, and on Meta in a dry run counting like
// that device, are the same, event by event.
inline void check_meta_allocates_as(Device device, const std::vector<AllocationCase>& cases) {
  for (const AllocationCase& c : cases) {
    INFO(c.what);
    auto body = [&](Device d) { Tensor out = c.run(d); };
    const std::vector<int64_t> real = allocation_deltas(device, device.type, body);
    CHECK(allocation_deltas(Device{kMeta}, device.type, body) == real);
  }
}

}  // namespace remat::testing
