// Dispatch cost per op call (the price SAC pays on every op): `a + b` on 1-element tensors,
// with grad off, with requires_grad (the autograd kernel records a node), and with one
// pass-through dispatch mode pushed: one whose dispatch() returns op.call(args) (the
// TorchDispatchMode way), and one that says so in DispatchMode::passes_through instead.
//
// The peer is measured, never quoted: `--libtorch BIN` (repeatable) runs BIN, the libtorch build
// of the same cases (tools/dispatch_libtorch.sh builds it), after remat's cases in the same run
// and prints its figures beside remat's with the ratio. Without it the libtorch column says that
// it was not measured. The pass-through-mode cases have no libtorch counterpart
// (TorchDispatchMode is Python-only).
//
//   bazel-bin/bench/dispatch_overhead --libtorch "$(tools/dispatch_libtorch.sh --build-only)"
//
// `--count CASE N` runs one case N times untimed and prints nothing else, for instruction counts
// that do not depend on the machine's load: the difference of two callgrind runs with different N,
// divided by the difference in N, is the instructions per call (CASE: plain, grad, mode, mode_grad,
// hook, hook_grad).
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null bazel-bin/bench/dispatch_overhead --count grad 20000
#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/ns_per_call.h"
#include "bench/peer_figures.h"
#include "remat.h"

using namespace remat;
using remat::bench::ns_per_call;

namespace {

struct PassThrough : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    return op.call(args);
  }
};

// The same mode, letting every call through by passes_through (dispatch() is then never called).
struct PassThroughHook : PassThrough {
  bool passes_through(const OperatorHandle&, const IValue*, size_t) override { return true; }
};

}  // namespace

// --count CASE N: the case's calls with nothing around them (see the comment at the top).
int count_calls(const std::string& name, int64_t n) {
  Tensor a = ones({1}), b = ones({1});
  Tensor ga = ones({1}).requires_grad_(), gb = ones({1}).requires_grad_();
  const bool grad = name == "grad" || name == "mode_grad" || name == "hook_grad";
  const bool mode = name == "mode" || name == "mode_grad";
  const bool hook = name == "hook" || name == "hook_grad";
  if (!grad && !mode && !hook && name != "plain") {
    throw UsageError("--count: unknown case '" + name + "' (plain, grad, mode, mode_grad, hook, hook_grad)");
  }
  std::optional<DispatchModeGuard> guard;
  if (mode) guard.emplace(std::make_shared<PassThrough>());
  if (hook) guard.emplace(std::make_shared<PassThroughHook>());
  const Tensor& x = grad ? ga : a;
  const Tensor& y = grad ? gb : b;
  for (int64_t i = 0; i < n; ++i) Tensor c = x + y;
  return 0;
}

namespace {

// The benchmark; main() below reports what it throws.
int run(int argc, char** argv) {
  std::vector<std::string> peers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--libtorch") == 0 && i + 1 < argc) {
      peers.push_back(argv[++i]);
      // Checked before anything is timed: a peer that cannot run is bad usage, not a failed run.
      if (access(peers.back().c_str(), X_OK) != 0)
        throw UsageError("--libtorch: '" + peers.back() + "' is not an executable file (" + std::strerror(errno) +
                         "; build it with tools/dispatch_libtorch.sh)");
    } else if (std::strcmp(argv[i], "--count") == 0 && i + 2 < argc) {
      return count_calls(argv[i + 1], parse_int("--count", argv[i + 2], 0));
    } else {
      throw UsageError(std::string("unknown or incomplete flag '") + argv[i] +
                       "' (usage: dispatch_overhead [--libtorch BIN]...  (BIN: see tools/dispatch_libtorch.sh) | "
                       "--count CASE N)");
    }
  }

  Tensor a = ones({1}), b = ones({1});
  Tensor ga = ones({1}).requires_grad_(), gb = ones({1}).requires_grad_();

  double plain = ns_per_call([&] { Tensor c = a + b; });
  double with_grad = ns_per_call([&] { Tensor c = ga + gb; });
  double mode;
  {
    DispatchModeGuard guard(std::make_shared<PassThrough>());
    mode = ns_per_call([&] { Tensor c = a + b; });
  }
  double mode_grad;
  {
    DispatchModeGuard guard(std::make_shared<PassThrough>());
    mode_grad = ns_per_call([&] { Tensor c = ga + gb; });
  }
  double hook, hook_grad;
  {
    DispatchModeGuard guard(std::make_shared<PassThroughHook>());
    hook = ns_per_call([&] { Tensor c = a + b; });
    hook_grad = ns_per_call([&] { Tensor c = ga + gb; });
  }

  // The peers run after remat's cases, one at a time, each in its own process.
  const std::map<std::string, std::string> required = {{"grad_off_ns", "a + b, grad off"},
                                                       {"requires_grad_ns", "a + b, requires_grad"}};
  std::vector<bench::PeerFigures> figures;
  for (const std::string& p : peers) figures.push_back(bench::run_peer(p, required));

  struct Row {
    const char* name;
    double remat;
    const char* peer_key;  // nullptr: no libtorch counterpart
  };
  const Row rows[] = {{"grad off", plain, "grad_off_ns"},
                      {"requires_grad (records a node)", with_grad, "requires_grad_ns"},
                      {"grad off, one pass-through dispatch mode", mode, nullptr},
                      {"requires_grad, one pass-through dispatch mode", mode_grad, nullptr},
                      {"grad off, the same by passes_through", hook, nullptr},
                      {"requires_grad, the same by passes_through", hook_grad, nullptr}};

  std::printf("%-46s %9s", "a + b on [1] tensors, ns/call", "remat");
  for (const bench::PeerFigures& f : figures)
    std::printf(" %16s %8s", ("libtorch " + f.version.substr(0, std::min(f.version.find('+'), size_t{7}))).c_str(), "ratio");
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%-46s %9.0f", r.name, r.remat);
    for (const bench::PeerFigures& f : figures) {
      double peer = r.peer_key ? f.get(r.peer_key) : -1.0;
      if (peer > 0) std::printf(" %16.0f %8.2f", peer, r.remat / peer);
      else std::printf(" %16s %8s", "-", "-");
    }
    std::printf("\n");
  }
  std::printf("pass-through mode overhead per op: %+.0f ns (grad off), %+.0f ns (requires_grad)\n",
              mode - plain, mode_grad - with_grad);
  std::printf("the same by passes_through:        %+.0f ns (grad off), %+.0f ns (requires_grad)\n",
              hook - plain, hook_grad - with_grad);
  if (figures.empty()) std::printf("libtorch: not measured (see tools/dispatch_libtorch.sh)\n");
  for (const bench::PeerFigures& f : figures)
    std::printf("libtorch %s: %s\n", f.version.c_str(), f.command.c_str());
  return 0;
}

}  // namespace

// Anything thrown: one "error: ..." line; exit 2 for bad usage, 1 for a failed run (engine/core/cli.h).
int main(int argc, char** argv) {
  return run_main([&] { return run(argc, argv); });
}
