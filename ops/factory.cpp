// Mirrors ATen/native/TensorFactories.cpp and ATen/native/Distributions.cpp: empty allocates
// directly (like at::empty's backend kernels); full, zeros and ones are ops (a dispatch mode, a
// SAC policy, a plan file sees aten::ones, as in PyTorch), dispatched on their Device argument
// (PyTorch's BackendSelect), whose kernels fill through fill_; the random draws are ops too. uniform_ and normal_ are registered from
// their Defs (ops/factory_defs.h).
#include <cmath>
#include <string>
#include <type_traits>

#include "engine/core/generator.h"
#include "engine/dispatch/library.h"
#include "kernels/cpu/random.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/factory_defs.h"
#include "ops/functions.h"
#include "ops/meta.h"

namespace remat {

namespace {
Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor empty(const Shape& size, TensorOptions options) {
  return finish(make_empty(size, options.dtype(), options.device()), options);
}
Tensor empty_like(const Tensor& t) { return make_empty(t.sizes(), t.dtype(), t.device()); }

namespace {
// aten::full, aten::zeros, aten::ones: one kernel for every backend (the fill dispatches on the
// new tensor's device; it runs below any dispatch mode, which sees the factory alone).
using FullSig = Tensor(const Shape&, double, ScalarType, Device);
using FilledSig = Tensor(const Shape&, ScalarType, Device);
Tensor full_kernel(const Shape& size, double value, ScalarType dtype, Device device) {
  Tensor t = make_empty(size, dtype, device);
  fill_(t, value);
  return t;
}
template <int kValue>
Tensor filled_kernel(const Shape& size, ScalarType dtype, Device device) {
  return full_kernel(size, kValue, dtype, device);
}
}  // namespace

Tensor full(const Shape& size, double value, TensorOptions options) {
  static const auto op = find_op("aten::full").typed<FullSig>();
  return finish(op.call(size, value, options.dtype(), options.device()), options);
}
Tensor zeros(const Shape& size, TensorOptions options) {
  static const auto op = find_op("aten::zeros").typed<FilledSig>();
  return finish(op.call(size, options.dtype(), options.device()), options);
}
Tensor ones(const Shape& size, TensorOptions options) {
  static const auto op = find_op("aten::ones").typed<FilledSig>();
  return finish(op.call(size, options.dtype(), options.device()), options);
}
Tensor scalar_tensor(double value, TensorOptions options) { return full({}, value, options); }

Tensor from_vector(const std::vector<double>& values, const Shape& size, TensorOptions options) {
  REMAT_CHECK(static_cast<int64_t>(values.size()) == shape_numel(size), "from_vector: ", values.size(),
              " values do not fill a tensor of shape ", size, " (", shape_numel(size), " elements)");
  // On Meta there is nothing to write (and no host buffer: a dry run allocates what the CPU
  // run allocates, one tensor); elsewhere the values are converted straight into place.
  if (options.device().is_meta()) return finish(make_empty(size, options.dtype(), options.device()), options);
  Tensor t = make_empty(size, options.dtype(), Device{kCPU});
  REMAT_DISPATCH_ALL_TYPES(options.dtype(), "from_vector", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<scalar_t>(values[i]);
  });
  if (!options.device().is_cpu()) t = t.to(options.device());
  return finish(std::move(t), options);
}

namespace {

constexpr double kTwoTo63 = 9223372036854775808.0;  // int64 holds [-2^63, 2^63)

std::string range_value_str(const RangeValue& v) { return v.is_integral ? std::to_string(v.i) : detail::str(v.d); }

// The argument as the accumulation type of the result's dtype (int64 for kLong, double for the
// floating types), as c10::Scalar::to does: a floating-point value outside int64's range throws.
template <class Acc>
Acc range_value_as(const RangeValue& v, const char* what) {
  if constexpr (std::is_same_v<Acc, int64_t>) {
    if (v.is_integral) return v.i;
    REMAT_CHECK(std::isfinite(v.d) && v.d >= -kTwoTo63 && v.d < kTwoTo63, "arange: ", what, "=", v.d,
                " does not fit the result's dtype Long");
    return static_cast<int64_t>(v.d);
  } else {
    return v.d;
  }
}

// Mirrors ATen/native/RangeUtils.h (compute_arange_size): the checks, and the length of the range.
template <class Acc>
int64_t arange_size(Acc start, Acc end, Acc step, const std::string& values) {
  REMAT_CHECK(step > 0 || step < 0, "arange: step must be nonzero (", values, ")");
  REMAT_CHECK(std::isfinite(static_cast<double>(start)) && std::isfinite(static_cast<double>(end)),
              "arange: unsupported range (", values, ")");
  REMAT_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
              "arange: upper bound and larger bound inconsistent with step sign (", values, ")");
  if constexpr (std::is_same_v<Acc, int64_t>) {
    // ceil((end - start) / step), exact in int64 (a double would round a long range).
    int64_t span = 0;
    const bool overflow =
        __builtin_sub_overflow(end, start, &span) || __builtin_add_overflow(span, step - (step > 0 ? 1 : -1), &span);
    REMAT_CHECK(!overflow, "arange: invalid size, possible overflow? (", values, ")");
    return span / step;
  } else {
    const double size = std::ceil((end - start) / step);
    REMAT_CHECK(size < kTwoTo63, "arange: invalid size, possible overflow? (", values, ")");
    return static_cast<int64_t>(size);
  }
}

}  // namespace

// Mirrors ATen/native/RangeFactories.cpp (arange_out) and the dtype inference of torch.arange.
Tensor arange(RangeValue start, RangeValue end, RangeValue step, TensorOptions options) {
  if (!options.has_dtype()) {
    options = options.dtype(start.is_integral && end.is_integral && step.is_integral ? kLong : kFloat);
  }
  const ScalarType dtype = options.dtype();
  const Device device = options.device();
  Tensor t;
  REMAT_DISPATCH_NUMERIC_TYPES(dtype, "arange", [&] {
    using acc_t = std::conditional_t<std::is_same_v<scalar_t, int64_t>, int64_t, double>;
    const acc_t xstart = range_value_as<acc_t>(start, "start");
    const acc_t xend = range_value_as<acc_t>(end, "end");
    const acc_t xstep = range_value_as<acc_t>(step, "step");
    const int64_t size = arange_size<acc_t>(xstart, xend, xstep,
                                            "start=" + range_value_str(start) + ", end=" + range_value_str(end) +
                                                ", step=" + range_value_str(step));
    // On Meta there are no values; elsewhere they are written on the CPU, then moved.
    t = make_empty({size}, dtype, device.is_meta() ? device : Device{kCPU});
    if (device.is_meta()) return;
    scalar_t* p = t.data_ptr<scalar_t>();
    for (int64_t k = 0; k < size; ++k) p[k] = static_cast<scalar_t>(xstart + static_cast<acc_t>(k) * xstep);
  });
  if (!device.is_cpu() && !device.is_meta()) t = t.to(device);
  return finish(std::move(t), options);
}
Tensor arange(RangeValue start, RangeValue end, TensorOptions options) {
  return arange(start, end, RangeValue(int64_t{1}), options);
}
Tensor arange(RangeValue end, TensorOptions options) {
  REMAT_CHECK(end.is_integral ? end.i >= 0 : !(end.d < 0), "arange: upper bound must be non-negative (got ",
              range_value_str(end), ")");
  return arange(RangeValue(int64_t{0}), end, RangeValue(int64_t{1}), options);
}

Tensor rand(const Shape& size, TensorOptions options, Generator* generator) {
  Tensor t = make_empty(size, options.dtype(), options.device());
  uniform_(t, 0.0, 1.0, generator);
  return finish(std::move(t), options);
}

Tensor randn(const Shape& size, TensorOptions options, Generator* generator) {
  Tensor t = make_empty(size, options.dtype(), options.device());
  normal_(t, 0.0, 1.0, generator);
  return finish(std::move(t), options);
}

namespace ops {

// Argument checks shared by every backend (declared in ops/meta.h).
void check_uniform(const Tensor& self, double from, double to) {
  check_floating("aten::uniform_", self, "self");
  check_no_internal_overlap("aten::uniform_", self);
  REMAT_CHECK(from <= to, "aten::uniform_: expects to return a [from, to) range, but found from=", from, " > to=", to);
}
void check_normal(const Tensor& self, double std) {
  check_floating("aten::normal_", self, "self");
  check_no_internal_overlap("aten::normal_", self);
  REMAT_CHECK(std >= 0.0, "aten::normal_: expects std >= 0.0, but found std ", std);
}

namespace {

Generator& pick(Generator* g, Device d) { return g != nullptr ? *g : default_generator(d); }

// The kernels: the Def's checks, one offset from the generator, the draws into
// random_fill_target (ops/factory_defs.h), copied into self when that is not self.
template <class Def, class Fill>
Tensor random_fill(const Tensor& self, double a, double b, Generator* generator, const Fill& fill) {
  Def::inplace_meta(Def::inplace_name, self, a, b, generator);
  Generator& gen = pick(generator, self.device());
  uint64_t offset = gen.reserve();
  uint64_t seed = gen.seed();
  Tensor dst = random_fill_target(self);
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), Def::inplace_name, [&] { fill(dst.data_ptr<scalar_t>(), seed, offset); });
  if (!dst.is_same(self)) copy_into_cpu(self, dst);
  self.impl()->bump_version();
  return self;
}

Tensor uniform__cpu(const Tensor& self, double from, double to, Generator* generator) {
  return random_fill<structured_uniform_>(self, from, to, generator, [&](auto* p, uint64_t seed, uint64_t offset) {
    kernels::cpu::uniform_kernel(p, self.numel(), seed, offset, from, to);
  });
}

Tensor normal__cpu(const Tensor& self, double mean, double std, Generator* generator) {
  return random_fill<structured_normal_>(self, mean, std, generator, [&](auto* p, uint64_t seed, uint64_t offset) {
    kernels::cpu::normal_kernel(p, self.numel(), seed, offset, mean, std);
  });
}

}  // namespace

// The factories' schemas (PyTorch's, less layout and pin_memory; dtype and device always given)
// and their kernel at every backend.
REMAT_LIBRARY_FRAGMENT(aten, m) {
  m.def("aten::full(int[] size, float fill_value, ScalarType dtype, Device device) -> Tensor");
  m.def("aten::zeros(int[] size, ScalarType dtype, Device device) -> Tensor");
  m.def("aten::ones(int[] size, ScalarType dtype, Device device) -> Tensor");
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta}) {
    m.impl("aten::full", k, KernelFunction::makeFromUnboxedFunction<&full_kernel>());
    m.impl("aten::zeros", k, KernelFunction::makeFromUnboxedFunction<&filled_kernel<0>>());
    m.impl("aten::ones", k, KernelFunction::makeFromUnboxedFunction<&filled_kernel<1>>());
  }
}

// The schemas and the Meta kernels (on Meta there are no values; an explicit generator still
// advances, so that offsets match a real run), from the Defs.
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_factory_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  for_each_factory_def([&](auto def) {
    using Def = typename decltype(def)::type;
    m.impl(Def::inplace_name, REMAT_FN(random_fill_meta<Def>));
  });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl(structured_uniform_::inplace_name, REMAT_FN(uniform__cpu));
  m.impl(structured_normal_::inplace_name, REMAT_FN(normal__cpu));
}

}  // namespace ops
}  // namespace remat
