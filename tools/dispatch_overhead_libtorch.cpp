// Mirrors bench/dispatch_overhead.cpp for libtorch itself (ATen's dispatcher and the generated
// VariableType kernels): the peer figures that bench prints beside remat's, measured, not quoted.
//
// Standalone on purpose: it is compiled by tools/dispatch_libtorch.sh against whichever libtorch
// the machine has (Debian's libtorch-dev, or a torch wheel), never by Bazel, CMake or CI, and it
// lives under tools/ so that CMake's bench/*.cpp program glob does not pick it up.
//
// Output: one `key value` line per figure, for `dispatch_overhead --libtorch BIN` to parse:
//   libtorch_version 1.13.0
//   grad_off_ns 431.2
//   requires_grad_ns 740.5
// The two pass-through-mode cases have no C++ counterpart (TorchDispatchMode is Python-only), so
// they are not printed.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>

// One "error: ..." line for anything thrown (c10::Error included), exit 1 (engine/core/cli.h).
#include "engine/core/cli.h"
// The same timing method as remat's side (tools/dispatch_libtorch.sh passes -I<repo root>).
#include "tools/ns_per_call.h"

using remat::bench::ns_per_call;

// The version is passed by tools/dispatch_libtorch.sh: the header that defines TORCH_VERSION has
// moved between releases (torch/version.h in 1.13, torch/headeronly/version.h in 2.x).
#ifndef REMAT_LIBTORCH_VERSION
#define REMAT_LIBTORCH_VERSION "unknown"
#endif

int main() {
  return remat::run_main([] {
    // One intra-op thread: a [1] add never parallelises, and remat's bench runs single-threaded.
    at::set_num_threads(1);
    at::Tensor a = at::ones({1}), b = at::ones({1});
    at::Tensor ga = at::ones({1}).requires_grad_(), gb = at::ones({1}).requires_grad_();

    double plain = ns_per_call([&] { at::Tensor c = a + b; });
    // Grad mode is on by default in C++, so this records an AddBackward0 node per call.
    double with_grad = ns_per_call([&] { at::Tensor c = ga + gb; });
    if (!(ga + gb).requires_grad()) {
      std::fprintf(stderr, "dispatch_overhead_libtorch: ga + gb did not record a node (grad mode off?)\n");
      return 1;
    }
    std::printf("libtorch_version %s\n", REMAT_LIBTORCH_VERSION);
    std::printf("grad_off_ns %.1f\n", plain);
    std::printf("requires_grad_ns %.1f\n", with_grad);
    return 0;
  });
}
