// Mirrors ATen/native/cuda/DistributionUniform.cu and DistributionNormal.cu registration:
// uniform_ and normal_ on CUDA, drawing from the device's default generator (or the one
// given) with the Philox offset rule of engine/core/generator.h, as ops/factory.cpp does;
// registered from their Defs (ops/factory_defs.h).
#include "engine/core/generator.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/random.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/factory_defs.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Generator& pick(Generator* g, Device d) { return g != nullptr ? *g : default_generator(d); }

// The kernels: the Def's checks, one offset from the generator, the draws into
// random_fill_target (ops/factory_defs.h), copied into self when that is not self.
template <class Def, class Fill>
Tensor random_fill_cuda(const Tensor& self, double a, double b, Generator* generator, const Fill& fill) {
  Def::inplace_meta(Def::inplace_name, self, a, b, generator);
  Generator& gen = pick(generator, self.device());
  const uint64_t offset = gen.reserve();
  const uint64_t seed = gen.seed();
  cuda::CUDAGuard guard(self.device());
  Tensor dst = random_fill_target(self);
  fill(dst, seed, offset);
  if (!dst.is_same(self)) copy_into_cuda(self, dst);
  self.impl()->bump_version();
  return self;
}

Tensor uniform__cuda(const Tensor& self, double from, double to, Generator* generator) {
  return random_fill_cuda<structured_uniform_>(self, from, to, generator,
                                               [&](const Tensor& dst, uint64_t seed, uint64_t offset) {
    kc::uniform(dst.dtype(), dst.data_ptr(), dst.numel(), seed, offset, from, to, cuda_stream(dst.device()));
  });
}

Tensor normal__cuda(const Tensor& self, double mean, double std, Generator* generator) {
  return random_fill_cuda<structured_normal_>(self, mean, std, generator,
                                              [&](const Tensor& dst, uint64_t seed, uint64_t offset) {
    kc::normal(dst.dtype(), dst.data_ptr(), dst.numel(), seed, offset, mean, std, cuda_stream(dst.device()));
  });
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl(structured_uniform_::inplace_name, REMAT_FN(uniform__cuda));
  m.impl(structured_normal_::inplace_name, REMAT_FN(normal__cuda));
}

}  // namespace remat::ops
