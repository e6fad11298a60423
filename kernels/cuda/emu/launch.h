// A kernel launch on the emulated device: what `kernel<<<grid, block, smem, stream>>>(args...)`
// does under nvcc (mirrors cudaLaunchKernel): checks the configuration (an error for
// cudaGetLastError, as CUDA sets it), copies the arguments, and queues the grid on the stream.
// Reached through REMAT_CUDA_LAUNCH (kernels/cuda/launch.h), never directly.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "engine/cuda/emu/emulation.h"
#include "kernels/cuda/emu/grid.h"

namespace remat::cuda_emu {

// "remat::kernels::cuda::{anonymous}::reduce_rows_kernel<32, 4, ...>", from the compiler.
std::string kernel_name_from_signature(const char* pretty_function);

template <auto Kernel>
const char* kernel_name() {
  static const std::string name = kernel_name_from_signature(__PRETTY_FUNCTION__);
  return name.c_str();
}

template <auto Kernel, class F = std::remove_pointer_t<decltype(Kernel)>>
struct Launcher;

template <auto Kernel, class... Params>
struct Launcher<Kernel, void(Params...)> {
  // The kernel again as a value: taking its address in an ordinary expression makes the compiler
  // instantiate it (GCC 12 does not always do so for a template argument alone).
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t shared_bytes;
  cudaStream_t stream;

  template <class... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "kernel launched with the wrong number of arguments");
    const void* id = reinterpret_cast<const void*>(kernel);
    if (cudaError_t err = check_launch(id, grid, block, shared_bytes); err != cudaSuccess) {
      set_last_error(err);
      return;
    }
    struct Closure {
      void (*kernel)(Params...);
      std::tuple<std::decay_t<Params>...> args;
      static void invoke(const void* self) {
        const auto* c = static_cast<const Closure*>(self);
        std::apply(c->kernel, c->args);  // each GPU thread gets its own copies
      }
    };
    auto closure =
        std::make_shared<Closure>(Closure{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)});
    KernelCall call;
    call.name = kernel_name<Kernel>();
    call.grid = grid;
    call.block = block;
    call.dynamic_shared_bytes = shared_bytes;
    call.invoke = &Closure::invoke;
    call.closure = closure.get();
    call.argument_bytes = &closure->args;
    call.argument_size = sizeof(closure->args);
    const cudaError_t err = enqueue(stream, [call, closure](std::string& message) { return run_grid(call, message); });
    if (err != cudaSuccess) set_last_error(err);
  }
};

}  // namespace remat::cuda_emu
