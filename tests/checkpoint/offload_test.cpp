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
