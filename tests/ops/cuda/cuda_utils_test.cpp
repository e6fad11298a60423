// Tests ops/cuda/cuda_utils.{h,cpp} and the CUDA registration as a whole: every op with a CPU
// kernel has a CUDA kernel (no GPU needed); the loop descriptor handed to kernels; the host
// helpers on a device.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "engine/dispatch/dispatcher.h"
#include "ops/cuda/cuda_utils.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every op with a CPU kernel has a CUDA kernel, but the CPU-only ones named here", "[cuda_utils]") {
  // CPU only by design: PyTorch's _for_cpu flash attention (its CUDA flash op is another op).
  // The fused optimizer steps have CUDA kernels (ops/cuda/fused_adam.cpp, ops/cuda/fused_sgd.cpp).
  const std::set<std::string> cpu_only = {"aten::_scaled_dot_product_flash_attention_for_cpu",
                                          "aten::_scaled_dot_product_flash_attention_for_cpu_backward"};
  std::set<std::string> missing;
  for (const std::string& name : registered_ops()) {
    const OperatorEntry* e = find_op(name).entry();
    if (e->hasKernelForKey(DispatchKey::CPU) && !e->hasKernelForKey(DispatchKey::CUDA)) missing.insert(name);
  }
  INFO("ops without a CUDA kernel: " << [&] {
    std::string s;
    for (const auto& m : missing) s += m + " ";
    return s;
  }());
  CHECK(missing == cpu_only);
  // The ops whose CPU kernels are being written elsewhere have CUDA kernels already.
  for (const char* name : {"aten::_softmax", "aten::_log_softmax", "aten::_softmax_backward_data",
                           "aten::_log_softmax_backward_data", "aten::native_layer_norm",
                           "aten::native_layer_norm_backward", "aten::_fused_rms_norm", "aten::_fused_rms_norm_backward",
                           "aten::native_dropout", "aten::native_dropout_backward", "aten::embedding",
                           "aten::embedding_dense_backward", "aten::cross_entropy", "aten::cross_entropy_backward",
                           "aten::_fused_adamw_", "aten::_fused_sgd_"}) {
    INFO(name);
    CHECK(find_op(name).entry()->hasKernelForKey(DispatchKey::CUDA));
  }
}

TEST_CASE("cuda_loop describes the broadcast iteration space, output first", "[cuda_utils]") {
  // Only metadata is read: CPU tensors stand in for device ones.
  Tensor out = empty({4, 5}), row = empty({5}), col = empty({4, 1});
  kernels::cuda::StridedLoop l = ops::cuda_loop(out, {&row, &col});
  REQUIRE(l.ndim == 2);
  CHECK(l.sizes[0] == 4);
  CHECK(l.sizes[1] == 5);
  CHECK(l.strides[0][0] == 5);
  CHECK(l.strides[0][1] == 1);
  CHECK(l.strides[1][0] == 0);  // the row repeats down the rows
  CHECK(l.strides[1][1] == 1);
  CHECK(l.strides[2][0] == 1);
  CHECK(l.strides[2][1] == 0);  // the column repeats along the columns
  Tensor a = empty({3, 4, 5}), b = empty({3, 4, 5});
  kernels::cuda::StridedLoop flat = ops::cuda_loop(a, {&b});
  CHECK(flat.ndim == 1);
  CHECK(flat.is_contiguous(2));
  CHECK(flat.numel() == 60);
}

TEST_CASE("cast, contiguous, fill and workspaces on a device", "[cuda_utils][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({3, 4}, kFloat, 1);
  Tensor g = x.to(cuda0());
  CHECK(ops::cast_cuda(g, kFloat).is_same(g));
  CHECK(equal(ops::cast_cuda(g, kDouble).to(Device(kCPU)), x.to(kDouble)));
  CHECK(ops::contiguous_cuda(g).is_same(g));
  CHECK(equal(ops::contiguous_cuda(g.t()).to(Device(kCPU)), x.t().contiguous()));
  ops::fill_cuda(g, 3.0);
  CHECK(equal(g.to(Device(kCPU)), full({3, 4}, 3.0)));
  Tensor ws = ops::cuda_workspace(1001, cuda0());
  CHECK(ws.nbytes() >= 1001);
  // The error record: nothing reported, then a reported position names the index stored there.
  Tensor indices = from_vector({0, 7, 2}, {3}, kLong).to(cuda0());
  auto message = [](int64_t index, int64_t position) {
    return "index " + std::to_string(index) + " at position " + std::to_string(position);
  };
  ops::CUDAIndexError err(cuda0());
  REQUIRE_NOTHROW(err.throw_if_set(indices, message));
  const unsigned long long position = 1;
  get_allocator(cuda0())->copy_from_host(err.get(), &position, sizeof(position));
  REQUIRE_THROWS_WITH(err.throw_if_set(indices, message), "index 7 at position 1");
}
