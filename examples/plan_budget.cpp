// The README's "a memory budget in, a plan out", compiled and run by CI (PyTorch plans only compiled
// graphs, with torch._functorch.config.activation_memory_budget): plan_checkpointing chooses what
// each block of a small GPT keeps for a peak-memory budget, by dry runs on the Meta device; the GPT
// then trains under the plan on the characters of a short text, and the plan's predicted peak is
// printed beside the measured one.
//
//   ./bazelw run //examples:plan_budget            # the default budget, 9 MiB
//   ./bazelw run //examples:plan_budget -- 7.5     # a budget in MiB
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "remat.h"
using namespace remat;

namespace {

// The opening of A Tale of Two Cities (Dickens, 1859): the tokens are its characters.
const std::string kText =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
    "it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had "
    "everything before us, we had nothing before us, we were all going direct to Heaven, we were all going "
    "direct the other way - in short, the period was so far like the present period, that some of its "
    "noisiest authorities insisted on its being received, for good or for evil, in the superlative degree "
    "of comparison only.";

// One token per distinct character, in order of first appearance.
struct Tokens {
  std::string vocab;
  std::vector<int64_t> ids;
  explicit Tokens(const std::string& text) {
    for (char c : text) {
      size_t id = vocab.find(c);
      if (id == std::string::npos) id = vocab.size(), vocab += c;
      ids.push_back(static_cast<int64_t>(id));
    }
  }
  // Rows of `t` consecutive tokens from offsets spread over the text; the targets are the next tokens.
  std::pair<Tensor, Tensor> batch(int64_t step, int64_t b, int64_t t) const {
    std::vector<double> x, y;
    const size_t windows = ids.size() - static_cast<size_t>(t);
    for (int64_t row = 0; row < b; ++row) {
      const size_t at = static_cast<size_t>(step * 37 + row * 61) % windows;
      for (size_t i = at; i < at + static_cast<size_t>(t); ++i) {
        x.push_back(static_cast<double>(ids[i]));
        y.push_back(static_cast<double>(ids[i + 1]));
      }
    }
    return {from_vector(x, {b, t}, kLong), from_vector(y, {b, t}, kLong)};
  }
};

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

// Anything thrown: one "error: ..." line (run_main, engine/core/cli.h); exit 2 for bad usage (the
// argument, or a budget below the lowest peak any plan reaches: the message names it), 1 for a
// failed run (e.g. std::bad_alloc, or stdout unwritable: a full disk).
int main(int argc, char** argv) {
  return run_main([&] {
    if (argc > 2)
      throw UsageError("expected at most one argument, the budget in MiB (default 9), got " + std::to_string(argc - 1));
    const double budget_mib =
        argc > 1 ? parse_float("BUDGET_MIB", argv[1], 0.001, 1 << 20, "a number of MiB from 0.001 to 1048576") : 9.0;
    const Tokens tokens(kText);
    nn::GPTConfig cfg;
    cfg.vocab_size = static_cast<int64_t>(tokens.vocab.size());
    cfg.block_size = 64, cfg.n_layer = 4, cfg.n_head = 4, cfg.n_embd = 64;
    const int64_t B = 8, T = 64;
    const optim::AdamWOptions adamw(3e-3);
    try {
      // One training step. The planner runs it on Device{kMeta} (dry runs), the loop below on the CPU.
      auto train_step = [](nn::GPT& model, optim::AdamW& opt, const Tensor& idx, const Tensor& targets) {
        opt.zero_grad();
        nn::GPTOutput out = model.forward(idx, targets);
        out.loss.backward();
        opt.step();
        return out.loss;
      };
      PlannedStep step = [&](const PolicyFn& policy, Device device) {
        nn::GPTConfig c = cfg;
        c.options = TensorOptions().device(device);
        nn::GPT model(c);
        model.set_checkpointing(nn::ActivationCheckpointing::selective(policy));
        optim::AdamW opt(model.parameters(), adamw);
        TensorOptions ids = TensorOptions().dtype(kLong).device(device);
        for (int i = 0; i < 2; ++i)  // two steps: from the second on, AdamW's moments are alive too
          train_step(model, opt, empty({B, T}, ids), empty({B, T}, ids));
      };
      CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{static_cast<int64_t>(budget_mib * (1 << 20))});
      std::printf("%s", plan.summary().c_str());

      // The real model, under the plan, on the text's tokens.
      reset_peak_memory_stats();
      nn::GPT model(cfg);
      model.set_checkpointing(nn::ActivationCheckpointing::planned(plan));
      optim::AdamW opt(model.parameters(), adamw);
      for (int64_t s = 1; s <= 20; ++s) {
        auto [idx, targets] = tokens.batch(s, B, T);
        const double loss = train_step(model, opt, idx, targets).item();
        if (s == 1 || s % 10 == 0) std::printf("step %2lld  loss %.3f\n", static_cast<long long>(s), loss);
      }
      std::printf("budget %.2f MiB: predicted peak %.2f MiB, measured %.2f MiB\n", budget_mib,
                  mib(plan.predicted_peak_bytes), mib(max_memory_allocated()));
      return max_memory_allocated() == plan.predicted_peak_bytes ? 0 : 1;
    } catch (const Error& e) {  // e.g. a budget below the lowest peak any plan reaches
      throw UsageError(e.what());
    }
  });
}
