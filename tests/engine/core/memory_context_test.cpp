// Tests engine/core/memory_context.{h,cpp}: the phase, category and op a storage is allocated under.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("memory context: a phase makes new storages temporaries; a category guard overrides it",
          "[memory_context]") {
  CHECK(current_memory_phase() == MemoryPhase::Other);
  CHECK(current_memory_category() == MemoryCategory::Other);
  {
    MemoryPhaseGuard forward(MemoryPhase::Forward);
    CHECK(current_memory_category() == MemoryCategory::Temporary);
    Tensor t = empty({2});
    CHECK(t.impl()->storage()->memory_category() == MemoryCategory::Temporary);
    {
      MemoryCategoryGuard state(MemoryCategory::OptimizerState);
      Tensor s = empty({2});
      CHECK(s.impl()->storage()->memory_category() == MemoryCategory::OptimizerState);
      DefaultMemoryPhaseGuard ignored(MemoryPhase::Backward);  // a phase is set: kept
      CHECK(current_memory_phase() == MemoryPhase::Forward);
    }
    CHECK(current_memory_category() == MemoryCategory::Temporary);
  }
  {
    DefaultMemoryPhaseGuard d(MemoryPhase::Optimizer);
    CHECK(current_memory_phase() == MemoryPhase::Optimizer);
  }
  CHECK(current_memory_phase() == MemoryPhase::Other);
  CHECK(std::string(toString(MemoryPhase::Recompute)) == "recompute");
  CHECK(std::string(toString(MemoryCategory::OptimizerState)) == "optimizer_state");
}

TEST_CASE("memory context: the dispatcher names the op being run, innermost first", "[memory_context]") {
  CHECK(current_memory_op().empty());
  std::vector<std::string> seen;
  int id = add_storage_observer([&](const StorageEvent& e) {
    if (!e.relabel && e.delta > 0) seen.push_back(current_memory_op());
  });
  Tensor a = ones({2, 3});
  Tensor b = linear(a, ones({4, 3}));  // aten::linear runs aten::mm inside
  remove_storage_observer(id);
  REQUIRE(!seen.empty());
  CHECK(seen.back() == "aten::mm");
  CHECK(current_memory_op().empty());
}

TEST_CASE("memory context: claim_memory re-labels by rank and ignores undefined tensors", "[memory_context]") {
  Tensor t = empty({3});
  CHECK(t.impl()->storage()->memory_category() == MemoryCategory::Other);
  claim_memory(t, MemoryCategory::Gradient);
  CHECK(t.impl()->storage()->memory_category() == MemoryCategory::Gradient);
  claim_memory(t, MemoryCategory::Activation);  // ranks after Gradient
  CHECK(t.impl()->storage()->memory_category() == MemoryCategory::Gradient);
  claim_memory(t, MemoryCategory::Parameter);
  CHECK(t.impl()->storage()->memory_category() == MemoryCategory::Parameter);
  claim_memory(Tensor(), MemoryCategory::Parameter);  // no-op
}

TEST_CASE("MemoryCategory::Offloaded: the last category, named \"offloaded\"", "[memory]") {
  CHECK(kNumMemoryCategories == 8);
  CHECK(static_cast<int>(MemoryCategory::Offloaded) == kNumMemoryCategories - 1);
  CHECK(std::string(toString(MemoryCategory::Offloaded)) == "offloaded");
  // Nothing is offloaded from the CPU; a dry run counts its own host bytes.
  CHECK(offloaded_memory_allocated(Device{kCPU}) == 0);
  DryRun dry(kCUDA);
  CHECK(offloaded_memory_allocated(Device{kMeta}) == 0);
  offloaded_host_stats(Device{kMeta}).on_alloc(100);
  CHECK(max_offloaded_memory_allocated(Device{kMeta}) == 100);
  offloaded_host_stats(Device{kMeta}).on_free(100);
  reset_peak_memory_stats(Device{kMeta});
  CHECK(max_offloaded_memory_allocated(Device{kMeta}) == 0);
}
