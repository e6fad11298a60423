// Mirrors ATen/native/cuda/DistributionUniform.cu and DistributionNormal.cu registration:
// uniform_ and normal_ on CUDA, drawing from the device's default generator (or the one
// given) with the Philox offset rule of engine/core/generator.h, as ops/factory.cpp does.
#include "engine/core/generator.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/random.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Generator& pick(Generator* g, Device d) { return g != nullptr ? *g : default_generator(d); }

template <class Fill>
Tensor random_fill_cuda(const char* op, const Tensor& self, Generator* generator, const Fill& fill) {
  check_floating(op, self, "self");
  Generator& gen = pick(generator, self.device());
  const uint64_t offset = gen.reserve();
  const uint64_t seed = gen.seed();
  cuda::CUDAGuard guard(self.device());
  Tensor dst = self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
  fill(dst, seed, offset);
  if (!dst.is_same(self)) copy_into_cuda(self, dst);
  self.impl()->bump_version();
  return self;
}

Tensor uniform__cuda(const Tensor& self, double from, double to, Generator* generator) {
  check_uniform(self, from, to);
  return random_fill_cuda("aten::uniform_", self, generator, [&](const Tensor& dst, uint64_t seed, uint64_t offset) {
    kc::uniform(dst.dtype(), dst.data_ptr(), dst.numel(), seed, offset, from, to, cuda_stream(dst.device()));
  });
}

Tensor normal__cuda(const Tensor& self, double mean, double std, Generator* generator) {
  check_normal(self, std);
  return random_fill_cuda("aten::normal_", self, generator, [&](const Tensor& dst, uint64_t seed, uint64_t offset) {
    kc::normal(dst.dtype(), dst.data_ptr(), dst.numel(), seed, offset, mean, std, cuda_stream(dst.device()));
  });
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("uniform_", REMAT_FN(uniform__cuda));
  m.impl("normal_", REMAT_FN(normal__cuda));
}

}  // namespace remat::ops
