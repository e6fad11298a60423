// Tests of checkpoint/offload.cpp: save_on_cpu.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/op_counter.h"

using namespace remat;

TEST_CASE("save_on_cpu: packs and unpacks every saved tensor; gradients unchanged", "[offload]") {
  Tensor x = randn({4, 4}, kDouble).requires_grad_();
  Tensor expected = autograd::grad({mm(x, x).sin().sum()}, {x})[0];
  std::vector<std::string> lines;
  set_checkpoint_trace(true);
  TraceSink previous = set_checkpoint_trace_sink([&](const std::string& l) { lines.push_back(l); });
  Tensor loss;
  {
    save_on_cpu offload(/*pin_memory=*/false);
    loss = mm(x, x).sin().sum();
  }
  set_checkpoint_trace(false);
  set_checkpoint_trace_sink(previous);
  REQUIRE(lines.size() == 3);  // mm saves x twice, sin saves mm's output
  REQUIRE(lines[0].find("save_on_cpu: pack 128 bytes from cpu") != std::string::npos);
  REQUIRE(equal(autograd::grad({loss}, {x})[0], expected));
}

TEST_CASE("save_on_cpu composes with checkpoint in both nestings", "[offload][checkpoint]") {
  Tensor x = randn({4, 4}, kDouble).requires_grad_();
  auto f = [](const Tensor& h) { return mm(h, h).sin().exp(); };
  Tensor expected = autograd::grad({f(x).sum()}, {x})[0];
  SECTION("checkpoint inside save_on_cpu: the region's inputs are offloaded") {
    Tensor loss;
    {
      save_on_cpu offload;
      loss = checkpoint(f, x).sum();
    }
    REQUIRE(equal(autograd::grad({loss}, {x})[0], expected));
  }
  SECTION("save_on_cpu inside the checkpointed function") {
    Tensor loss = checkpoint([&](const Tensor& h) {
      save_on_cpu offload;
      return f(h);
    }, x).sum();
    REQUIRE(equal(autograd::grad({loss}, {x})[0], expected));
  }
}

// SAC's CPU offload policies off a CUDA device (checkpoint/selective.h): they act as SAVE.
namespace {

struct CpuRun {
  std::vector<Tensor> grads;
  CheckpointRegionStats total;
  std::vector<std::string> lines;
};

// Three checkpointed layers; each region's first mm is kept as `kept_as` says.
CpuRun three_layers(CheckpointPolicy kept_as, Device device = Device{kCPU}) {
  Generator g(7);
  std::vector<Tensor> ws;
  for (int i = 0; i < 3; ++i) {
    Tensor w = device.is_meta() ? empty({8, 8}, TensorOptions().device(device)) : randn({8, 8}, TensorOptions(), &g);
    ws.push_back(w.requires_grad_());
  }
  Tensor x = device.is_meta() ? empty({4, 8}, TensorOptions().device(device)) : randn({4, 8}, TensorOptions(), &g);
  PolicyFn policy = [kept_as](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
    return op.name() == "aten::mm" ? kept_as : CheckpointPolicy::PREFER_RECOMPUTE;
  };
  CheckpointOptions o;
  o.context_fn = [policy] { return create_selective_checkpoint_contexts(policy); };
  CpuRun r;
  reset_checkpoint_stats();
  set_checkpoint_trace(true);
  TraceSink previous = set_checkpoint_trace_sink([&](const std::string& l) { r.lines.push_back(l); });
  Tensor h = x;
  for (const Tensor& w : ws) {
    h = checkpoint([w](const Tensor& in) { return gelu(mm(mm(in, w), w)); }, h, o);  // two mm calls per region
  }
  sum(h).backward();
  set_checkpoint_trace(false);
  set_checkpoint_trace_sink(previous);
  r.total = checkpoint_stats().total;
  if (!device.is_meta())
    for (const Tensor& w : ws) r.grads.push_back(w.grad());
  return r;
}

int64_t count_lines(const std::vector<std::string>& lines, const std::string& needle) {
  int64_t n = 0;
  for (const std::string& l : lines) n += l.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("SAC CPU offload on the CPU: acts as SAVE, bitwise, and the trace says so once per region",
          "[offload][selective]") {
  for (CheckpointPolicy p : {CheckpointPolicy::MUST_CPU_OFFLOAD, CheckpointPolicy::PREFER_CPU_OFFLOAD}) {
    INFO(toString(p));
    const CpuRun offload = three_layers(p);
    const CpuRun save = three_layers(CheckpointPolicy::MUST_SAVE);
    REQUIRE(offload.grads.size() == 3);
    for (size_t i = 0; i < 3; ++i) CHECK(equal(offload.grads[i], save.grads[i]));
    CHECK(offload.total.sac_tensors_saved == save.total.sac_tensors_saved);
    CHECK(offload.total.sac_tensors_saved == 6);
    CHECK(offload.total.sac_tensors_offloaded == 0);
    CHECK(offload.total.sac_bytes_offloaded == 0);
    CHECK(offload.total.ops_recomputed == save.total.ops_recomputed);
    // Once per region (three regions, two offload answers each).
    CHECK(count_lines(offload.lines, std::string(toString(p)) + " acts as SAVE on cpu (offload needs a CUDA device)") == 3);
    CHECK(count_lines(offload.lines, "and every later offload answer of this region are kept where they are") == 3);
    CHECK(count_lines(save.lines, "acts as SAVE") == 0);
  }
  CHECK(offloaded_memory_allocated(Device{kCPU}) == 0);
}

TEST_CASE("SAC CPU offload on Meta counting like the CPU acts as SAVE; counting like CUDA it offloads",
          "[offload][selective][dry_run]") {
  {
    DryRun dry(kCPU);
    const CpuRun r = three_layers(CheckpointPolicy::MUST_CPU_OFFLOAD, Device{kMeta});
    CHECK(r.total.sac_tensors_offloaded == 0);
    CHECK(count_lines(r.lines, "MUST_CPU_OFFLOAD acts as SAVE on meta") == 3);
    CHECK(max_offloaded_memory_allocated(Device{kMeta}) == 0);
  }
  {
    DryRun dry(kCUDA);
    const CpuRun r = three_layers(CheckpointPolicy::MUST_CPU_OFFLOAD, Device{kMeta});
    CHECK(r.total.sac_tensors_offloaded == 6);
    CHECK(r.total.sac_bytes_offloaded == 6 * 4 * 8 * 4);
    CHECK(count_lines(r.lines, "acts as SAVE") == 0);
    CHECK(count_lines(r.lines, "output offloaded to pinned host memory, 128 bytes") == 6);
    // All six in host memory when the forward ends; each replayed in its region's rerun.
    CHECK(max_offloaded_memory_allocated(Device{kMeta}) == 3 * 2 * 128);
    CHECK(r.total.ops_replayed == 6);
    CHECK(offloaded_memory_allocated(Device{kMeta}) == 0);
  }
}

TEST_CASE("offload_supported / check_offload_supported: a caller that needs offload gets an error naming the device",
          "[offload][errors]") {
  CHECK_FALSE(offload_supported(Device{kCPU}));
  CHECK_THROWS_WITH(check_offload_supported(Device{kCPU}, "plan_checkpointing"),
                    "plan_checkpointing: cannot offload tensors of cpu to pinned host memory (its tensors are in host "
                    "memory already; offload needs a CUDA device)");
  {
    DryRun dry(kCPU);
    CHECK_FALSE(offload_supported(Device{kMeta}));
    CHECK_THROWS_WITH(check_offload_supported(Device{kMeta}, "CheckpointPlan::policy"),
                      Catch::Contains("cannot offload tensors of meta") &&
                          Catch::Contains("a Meta dry run offloads only while it imitates CUDA"));
  }
  {
    DryRun dry(kCUDA);
    CHECK(offload_supported(Device{kMeta}));
    CHECK_NOTHROW(check_offload_supported(Device{kMeta}, "x"));
  }
  CHECK_THROWS_WITH(offloaded_host_stats(Device{kCPU}),
                    Catch::Contains("offloaded_host_stats: nothing is offloaded from cpu"));
#ifndef REMAT_CUDA
  CHECK_FALSE(offload_supported(Device{kCUDA}));
  CHECK_THROWS_WITH(check_offload_supported(Device{kCUDA}, "plan"), Catch::Contains("CUDA is not available"));
#endif
}

TEST_CASE("policies::offload_ops and offload_scopes answer MUST_CPU_OFFLOAD; compose takes it as decisive",
          "[offload][policies]") {
  SelectiveCheckpointContext ctx;
  ctx.scope = "layers.0.mlp.fc1";
  const OperatorHandle mm_op = find_op("aten::mm");
  const OperatorHandle gelu_op = find_op("aten::gelu");
  CHECK(policies::offload_ops({"aten::mm"})(ctx, mm_op, {}) == CheckpointPolicy::MUST_CPU_OFFLOAD);
  CHECK(policies::offload_ops({"aten::mm"})(ctx, gelu_op, {}) == CheckpointPolicy::PREFER_RECOMPUTE);
  CHECK(policies::offload_scopes({"*.mlp.fc1"})(ctx, gelu_op, {}) == CheckpointPolicy::MUST_CPU_OFFLOAD);
  CHECK_THROWS_WITH(policies::offload_ops({"aten::nope"}), Catch::Contains("policies::offload_ops: 'aten::nope'"));
  // MUST_CPU_OFFLOAD is decisive, PREFER_CPU_OFFLOAD is not.
  PolicyFn prefer_offload = [](const SelectiveCheckpointContext&, const OperatorHandle&, const std::vector<IValue>&) {
    return CheckpointPolicy::PREFER_CPU_OFFLOAD;
  };
  CHECK(policies::compose({policies::offload_ops({"aten::mm"}), policies::save_all()})(ctx, mm_op, {}) ==
        CheckpointPolicy::MUST_CPU_OFFLOAD);
  CHECK(policies::compose({prefer_offload, policies::save_all()})(ctx, mm_op, {}) == CheckpointPolicy::PREFER_SAVE);
  CHECK(policies::compose({policies::save_all(), prefer_offload})(ctx, mm_op, {}) ==
        CheckpointPolicy::PREFER_CPU_OFFLOAD);
  CHECK(is_kept(CheckpointPolicy::PREFER_CPU_OFFLOAD));
  CHECK_FALSE(is_save(CheckpointPolicy::MUST_CPU_OFFLOAD));
  CHECK(is_offload(CheckpointPolicy::MUST_CPU_OFFLOAD));
  CHECK(std::string(toString(CheckpointPolicy::PREFER_CPU_OFFLOAD)) == "PREFER_CPU_OFFLOAD");
}
