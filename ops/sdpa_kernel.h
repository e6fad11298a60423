// Mirrors torch/nn/attention/__init__.py (SDPBackend, sdpa_kernel) and the backend flags of
// ATen/Context.h that it sets: which implementations scaled_dot_product_attention may pick.
//
//   {
//     sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);   // with torch.nn.attention.sdpa_kernel(...):
//     Tensor y = scaled_dot_product_attention(q, k, v, /*is_causal=*/true);
//   }
//
// remat's default is the math path alone (PyTorch's CPU default tries the fused kernel first):
// the composite keeps every primitive op visible to autograd, dispatch modes and SAC policies.
// The setting is per thread (PyTorch's flags are global).
#pragma once

#include <vector>

namespace remat {

enum class SDPBackend {
  MATH,             // the composite of matmul, softmax, ... (ops/attention.cpp)
  // The fused op of the device: aten::_scaled_dot_product_flash_attention_for_cpu on the CPU
  // (ops/flash_attention.cpp), aten::_scaled_dot_product_efficient_attention on CUDA
  // (ops/cuda/attention.cpp; PyTorch names it EFFICIENT_ATTENTION, remat has one fused entry).
  FLASH_ATTENTION,
};
const char* toString(SDPBackend backend);

// The backends scaled_dot_product_attention may use on this thread, in priority order of
// PyTorch's CPU selection (the fused one first, where its constraints hold).
std::vector<SDPBackend> enabled_sdpa_backends();

// RAII: while alive, only these backends are enabled on this thread; restores the previous set.
class sdpa_kernel {
 public:
  explicit sdpa_kernel(SDPBackend backend);
  explicit sdpa_kernel(std::vector<SDPBackend> backends);  // throws for an empty list
  ~sdpa_kernel();
  sdpa_kernel(const sdpa_kernel&) = delete;
  sdpa_kernel& operator=(const sdpa_kernel&) = delete;

 private:
  unsigned previous_;
};

}  // namespace remat
