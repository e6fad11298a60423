// Tests the CPU offload policies of checkpoint/selective.cpp (MUST_CPU_OFFLOAD) and their
// machinery in checkpoint/offload.cpp on kCUDA (under --config=cuda_emu, the emulated device): a
// small MLP and the tiny GPT offload matmul outputs to pinned host memory; their gradients are
// bitwise those of MUST_SAVE, the device's allocations and frees, event by event, and its
// reserved bytes are a Meta dry run's, the host bytes are the dry run's and the offloaded
// outputs' bytes, and the device peak is lower than keeping them.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;

namespace {

// What a step shows of the device's memory and of the host bytes offloaded from it.
struct Figures {
  std::vector<int64_t> deltas, reserved;  // the device's events, and memory_reserved after each
  int64_t peak = 0, peak_reserved = 0;
  int64_t host_peak = 0, host_after = 0;  // offloaded_memory_allocated's peak, and now

  static Figures read(const MemoryTracker& tracker, Device device) {
    Figures f;
    f.peak = max_memory_allocated(device);
    f.peak_reserved = max_memory_reserved(device);
    f.host_peak = max_offloaded_memory_allocated(device);
    f.host_after = offloaded_memory_allocated(device);
    for (const MemoryEvent& e : tracker.timeline()) {
      f.deltas.push_back(e.delta);
      f.reserved.push_back(e.reserved);
    }
    return f;
  }
};

// A dry run's prediction: the same allocations and frees in the same order, reserved bytes after
// each, the peaks, and the host bytes.
void check_predicted(const Figures& measured, const Figures& predicted) {
  CHECK(measured.deltas.size() == predicted.deltas.size());
  CHECK(measured.deltas == predicted.deltas);
  CHECK(measured.reserved == predicted.reserved);
  CHECK(measured.peak == predicted.peak);
  CHECK(measured.peak_reserved == predicted.peak_reserved);
  CHECK(measured.host_peak == predicted.host_peak);
  CHECK(measured.host_after == predicted.host_after);
  CHECK(measured.host_after == 0);
}

struct Measured {
  std::vector<std::vector<double>> grads;  // CUDA only
  Figures f;
  int64_t host_event_bytes = 0;            // CUDA: Offloaded bytes allocated on the CPU (MemoryTracker)
  CheckpointRegionStats total;
};

constexpr int64_t kB = 32, kD = 16, kH = 256, kLayers = 4;
constexpr int64_t kOffloadedBytes = kB * kH * 4;  // one fc1 output (f32) per layer

Tensor param(Shape shape, Device device, uint64_t seed) {
  if (device.is_meta()) return empty(shape, TensorOptions().device(device)).requires_grad_();
  Generator g(seed);
  Tensor t = randn(shape, TensorOptions(), &g).to(device);
  return t.requires_grad_();
}

// One forward and backward of kLayers residual MLP blocks, each a checkpointed region whose first
// mm (fc1, read by gelu's backward) is kept as `kept_as` says.
Measured mlp_step(Device device, CheckpointPolicy kept_as) {
  std::vector<Tensor> w1, w2;
  for (int64_t l = 0; l < kLayers; ++l) {
    w1.push_back(param({kD, kH}, device, 10 + static_cast<uint64_t>(l)));
    w2.push_back(param({kH, kD}, device, 20 + static_cast<uint64_t>(l)));
  }
  Tensor x = device.is_meta() ? empty({kB, kD}, TensorOptions().device(device)) : param({kB, kD}, device, 1).detach();
  PolicyFn policy = [kept_as](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                              const std::vector<IValue>&) {
    return op.name() == "aten::mm" && ctx.index == 0 ? kept_as : CheckpointPolicy::PREFER_RECOMPUTE;
  };
  CheckpointOptions o;
  o.context_fn = [policy] { return create_selective_checkpoint_contexts(policy); };
  Measured m;
  reset_checkpoint_stats();
  reset_peak_memory_stats(device);
  {
    MemoryTracker tracker(device);
    MemoryTracker host(Device{kCPU});
    Tensor h = x;
    for (int64_t l = 0; l < kLayers; ++l) {
      const Tensor a = w1[static_cast<size_t>(l)], b = w2[static_cast<size_t>(l)];
      h = checkpoint([a, b](const std::vector<Tensor>& in) -> std::vector<Tensor> {
            return {in[0] + mm(gelu(mm(in[0], a)), b)};
          }, std::vector<Tensor>{h}, o)[0];
    }
    sum(h).backward();
    h = Tensor();
    m.f = Figures::read(tracker, device);
    for (const MemoryEvent& e : host.timeline())
      if (e.category == MemoryCategory::Offloaded && e.delta > 0) m.host_event_bytes += e.delta;
  }
  m.total = checkpoint_stats().total;
  if (!device.is_meta())
    for (const std::vector<Tensor>* ws : {&w1, &w2})
      for (const Tensor& w : *ws) m.grads.push_back(w.grad().to_vector());
  return m;
}

Measured mlp_on_cuda(CheckpointPolicy kept_as) {
  const Device cuda = testing::cuda0();
  cuda_synchronize();
  REQUIRE(memory_allocated(cuda) == 0);  // the dry run starts from an empty cache
  empty_cache(cuda);
  REQUIRE(memory_reserved(cuda) == 0);
  Measured m = mlp_step(cuda, kept_as);
  cuda_synchronize();
  empty_cache(cuda);
  return m;
}

Measured mlp_dry_run(CheckpointPolicy kept_as) {
  DryRun dry(kCUDA);
  return mlp_step(Device{kMeta}, kept_as);
}

}  // namespace

TEST_CASE("CPU offload on CUDA: an MLP's gradients are MUST_SAVE's bits, its memory the dry run's, event by event",
          "[offload][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Measured offload = mlp_on_cuda(CheckpointPolicy::MUST_CPU_OFFLOAD);
  const Measured save = mlp_on_cuda(CheckpointPolicy::MUST_SAVE);
  // Bitwise the gradients of keeping the outputs on the device.
  REQUIRE(offload.grads.size() == static_cast<size_t>(2 * kLayers));
  CHECK(offload.grads == save.grads);
  // Host bytes: every layer's fc1 output, all in host memory when forward ends, none after.
  CHECK(offload.total.sac_tensors_offloaded == kLayers);
  CHECK(offload.total.sac_bytes_offloaded == kLayers * kOffloadedBytes);
  CHECK(offload.f.host_peak == kLayers * kOffloadedBytes);
  CHECK(offload.host_event_bytes == kLayers * kOffloadedBytes);  // MemoryTracker(cpu) sees them, as Offloaded
  CHECK(save.f.host_peak == 0);
  // The device keeps at most two regions' outputs (the one replayed, the one prefetched).
  CHECK(offload.f.peak < save.f.peak);
  WARN("device peak: offload " << offload.f.peak << ", keep " << save.f.peak << " bytes");
  // The dry run predicts it: the same allocations and frees in the same order, reserved bytes
  // after each, the peaks, and the host bytes.
  for (CheckpointPolicy p : {CheckpointPolicy::MUST_CPU_OFFLOAD, CheckpointPolicy::MUST_SAVE}) {
    INFO(toString(p));
    const Measured& measured = p == CheckpointPolicy::MUST_SAVE ? save : offload;
    const Measured predicted = mlp_dry_run(p);
    check_predicted(measured.f, predicted.f);
    CHECK(measured.total.sac_bytes_offloaded == predicted.total.sac_bytes_offloaded);
  }
  CHECK(offload_supported(testing::cuda0()));
}

TEST_CASE("CPU offload on CUDA: PREFER_CPU_OFFLOAD offloads too, and compose treats MUST_CPU_OFFLOAD as decisive",
          "[offload]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Measured prefer = mlp_on_cuda(CheckpointPolicy::PREFER_CPU_OFFLOAD);
  CHECK(prefer.total.sac_bytes_offloaded == kLayers * kOffloadedBytes);
  PolicyFn composed = policies::compose({policies::offload_ops({"aten::mm"}), policies::save_all()});
  SelectiveCheckpointContext ctx;
  CHECK(composed(ctx, find_op("aten::mm"), {}) == CheckpointPolicy::MUST_CPU_OFFLOAD);
  CHECK(composed(ctx, find_op("aten::gelu"), {}) == CheckpointPolicy::PREFER_SAVE);
}

TEST_CASE("CPU offload on CUDA: pinned memory that cannot be had is an error naming the bytes, not a fall back",
          "[offload][errors]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  if (!cuda::is_emulated()) {
    WARN("needs the emulated device's pinned-memory cap (REMAT_CUDA_EMU_HOST_MEMORY); not checked on a GPU");
    return;
  }
  const Device cuda = testing::cuda0();
  Tensor w = param({kD, kH}, cuda, 3);
  Tensor x = param({kB, kD}, cuda, 4).detach();
  CheckpointOptions o;
  o.context_fn = [] { return create_selective_checkpoint_contexts(policies::offload_ops({"aten::mm"})); };
  setenv("REMAT_CUDA_EMU_HOST_MEMORY", "1000", 1);
  std::string message;
  try {
    checkpoint([w](const Tensor& h) { return gelu(mm(h, w)); }, x, o);
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  unsetenv("REMAT_CUDA_EMU_HOST_MEMORY");
  CHECK_THAT(message, Catch::Contains("cannot offload the output of <top> / aten::mm / #0 (32768 bytes"));
  CHECK_THAT(message, Catch::Contains("cudaMallocHost of 32768 bytes failed"));
  CHECK_THAT(message, Catch::Contains("never falls back to keeping the tensor"));
  CHECK(offloaded_memory_allocated(cuda) == 0);
  // With the cap lifted, the same region offloads.
  Tensor y = checkpoint([w](const Tensor& h) { return gelu(mm(h, w)); }, x, o);
  CHECK(offloaded_memory_allocated(cuda) == 32768);
  sum(y).backward();
  CHECK(offloaded_memory_allocated(cuda) == 0);
}

TEST_CASE("CPU offload on CUDA: an offloaded output changed in place in its region is an error", "[offload][errors]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  Tensor w = param({kD, kH}, cuda, 3);
  Tensor x = param({kB, kD}, cuda, 4).detach();
  CheckpointOptions o;
  o.context_fn = [] { return create_selective_checkpoint_contexts(policies::offload_ops({"aten::mm"})); };
  CHECK_THROWS_WITH(checkpoint(
                        [w](const Tensor& h) {
                          Tensor a = mm(h, w);
                          a.mul_(2.0);
                          return gelu(a);
                        },
                        x, o),
                    Catch::Contains("Tensor cached during selective activation checkpoint has been mutated") &&
                        Catch::Contains("the output of <top> / aten::mm / #0 was offloaded to host memory") &&
                        Catch::Contains("version 0 when offloaded, now 1"));
}

// The tiny GPT of tests/nn/cuda/gpt_test.cpp (four blocks here), with its MLPs' fc1 outputs offloaded.
namespace {

struct GptRun {
  std::vector<double> grads;
  Figures f;
  int64_t offloaded_bytes = 0;
  double loss = 0;
};

GptRun gpt_step(Device device, CheckpointPolicy fc1) {
  nn::GPTConfig cfg;
  cfg.vocab_size = 65;
  cfg.block_size = 32;
  cfg.n_layer = 4;  // more blocks than the two whose fc1 outputs an offloading backward holds at once
  cfg.n_head = 4;
  cfg.n_embd = 64;
  cfg.dropout = 0.0;
  cfg.options = TensorOptions().device(device);
  nn::GPT model(cfg);
  model.set_checkpointing(nn::ActivationCheckpointing::selective(
      [fc1](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
        const bool matmul = op.name() == "aten::mm" || op.name() == "aten::addmm";
        if (matmul && ctx.scope.find("mlp.fc1") != std::string::npos) return fc1;
        return CheckpointPolicy::PREFER_RECOMPUTE;
      }));
  const int64_t batch = 8, seq = 32;  // activations large enough against parameters and gradients
  const TensorOptions lo = TensorOptions().dtype(kLong).device(device);
  Tensor idx, targets;
  if (device.is_meta()) {
    idx = empty({batch, seq}, lo);
    targets = empty({batch, seq}, lo);
  } else {
    std::vector<double> a, b;
    for (int64_t i = 0; i < batch * seq; ++i) {
      a.push_back(static_cast<double>((i * 7 + 3) % cfg.vocab_size));
      b.push_back(static_cast<double>((i * 5 + 1) % cfg.vocab_size));
    }
    idx = from_vector(a, {batch, seq}, lo);
    targets = from_vector(b, {batch, seq}, lo);
  }
  GptRun r;
  reset_checkpoint_stats();
  reset_peak_memory_stats(device);
  {
    MemoryTracker tracker(device);
    nn::GPTOutput out = model.forward(idx, targets);
    out.loss.backward();
    r.f = Figures::read(tracker, device);
    if (!device.is_meta()) r.loss = out.loss.item();  // after the figures: item() copies
  }
  r.offloaded_bytes = checkpoint_stats().total.sac_bytes_offloaded;
  if (!device.is_meta())
    for (const Tensor& p : model.parameters())
      for (double v : p.grad().to_vector()) r.grads.push_back(v);
  return r;
}

}  // namespace

TEST_CASE("CPU offload on CUDA: the tiny GPT, fc1 offloaded: MUST_SAVE's gradients, the dry run's memory",
          "[offload][gpt][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  std::vector<GptRun> measured;
  for (CheckpointPolicy p : {CheckpointPolicy::MUST_CPU_OFFLOAD, CheckpointPolicy::MUST_SAVE}) {
    INFO(toString(p));
    cuda_synchronize();
    REQUIRE(memory_allocated(cuda) == 0);
    empty_cache(cuda);
    measured.push_back(gpt_step(cuda, p));
    cuda_synchronize();
    empty_cache(cuda);
    GptRun predicted;
    {
      DryRun dry(kCUDA);
      predicted = gpt_step(Device{kMeta}, p);
    }
    const GptRun& m = measured.back();
    check_predicted(m.f, predicted.f);
    CHECK(m.offloaded_bytes == predicted.offloaded_bytes);
  }
  const GptRun& offload = measured[0];
  const GptRun& save = measured[1];
  // Four blocks, each fc1 output [8 * 32, 4 * 64] in f32.
  const int64_t fc1_bytes = 8 * 32 * 4 * 64 * 4;
  CHECK(offload.offloaded_bytes == 4 * fc1_bytes);
  CHECK(offload.f.host_peak == 4 * fc1_bytes);
  CHECK(save.f.host_peak == 0);
  CHECK(offload.loss == save.loss);
  REQUIRE(!offload.grads.empty());
  CHECK(offload.grads == save.grads);
  CHECK(offload.f.peak < save.f.peak);
  WARN("GPT device peak: offload " << offload.f.peak << ", keep " << save.f.peak << " bytes");
}

TEST_CASE("save_on_cpu(pin_memory=true) on CUDA: pinned copies on the offload stream, the same gradients",
          "[offload][save_on_cpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  Tensor w = param({kD, kH}, cuda, 5);
  Tensor x = param({kB, kD}, cuda, 6).detach();
  auto f = [&] { return sum(gelu(mm(x, w))); };  // mm saves a view (w's transpose is not) and gelu its input
  const std::vector<double> expected = autograd::grad({f()}, {w})[0].to_vector();
  Tensor loss;
  int64_t pinned = 0;
  {
    save_on_cpu offload(/*pin_memory=*/true);
    loss = f();
    pinned = memory_allocated(Device{kCPU});
  }
  CHECK(offloaded_memory_allocated(cuda) > 0);  // gelu's input went to pinned memory
  CHECK(pinned >= offloaded_memory_allocated(cuda));
  CHECK(autograd::grad({loss}, {w})[0].to_vector() == expected);
}
