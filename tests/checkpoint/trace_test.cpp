// Tests of checkpoint/trace.cpp: a region's life read from its trace.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("the trace shows pack, recompute, policy decisions, cache hits and unpack", "[trace]") {
  std::vector<std::string> lines;
  set_checkpoint_trace(true);
  TraceSink previous = set_checkpoint_trace_sink([&](const std::string& l) { lines.push_back(l); });
  Tensor x = randn({2, 2}).requires_grad_();
  CheckpointOptions o;
  o.context_fn = [] { return create_selective_checkpoint_contexts({"aten::mm"}); };
  // exp's output is saved and not kept: backward reruns the region.
  Tensor loss = checkpoint([](const Tensor& h) { return mm(h, h).sin().exp().sum(); }, x, o);
  loss.backward();
  set_checkpoint_trace(false);
  set_checkpoint_trace_sink(previous);

  auto has = [&](const std::string& needle) {
    for (const std::string& l : lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  };
  INFO([&] {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }());
  REQUIRE(has(": forward (non-reentrant, early_stop=true, 1 inputs saved)"));
  REQUIRE(has(": policy <top> / aten::mm / #0 -> MUST_SAVE (output kept, 16 bytes)"));
  REQUIRE(has(": policy <top> / aten::sin / #0 -> PREFER_RECOMPUTE (recompute)"));
  // x is the region's input and mm's output is cached: both are held as they are.
  REQUIRE(has(": pack #0 MmBackward0 Tensor[2, 2] Float -> kept as is (not produced here, or kept by SAC)"));
  REQUIRE(has(": pack #2 SinBackward0 Tensor[2, 2] Float -> kept as is"));
  REQUIRE(has(": pack #3 ExpBackward0 Tensor[2, 2] Float -> holder (data not kept)"));
  REQUIRE(has(", 1 of 4 saved tensors to refill, early_stop=true)"));
  REQUIRE(has(": cache hit aten::mm #0 (replayed, not recomputed)"));
  REQUIRE(has(": recompute stopped early: the last needed tensor was refilled (4 tensors saved)"));
  REQUIRE(has(": unpack #3 ExpBackward0 (graph task"));
  REQUIRE_FALSE(has("sac #0"));  // the modes know their region
}

TEST_CASE("no trace lines when tracing is off", "[trace]") {
  int n = 0;
  TraceSink previous = set_checkpoint_trace_sink([&](const std::string&) { ++n; });
  set_checkpoint_trace(false);
  Tensor x = randn({2}).requires_grad_();
  checkpoint([](const Tensor& h) { return h.sin(); }, x).sum().backward();
  set_checkpoint_trace_sink(previous);
  REQUIRE(n == 0);
}
