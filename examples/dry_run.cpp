// The README's "dry runs" code, compiled (torch's FakeTensorMode + MemTracker, exact): a
// GPT-2-XL-sized training step on the Meta device, which touches no memory and runs no kernel,
// predicts the step's peak memory and what it is made of.
#include <cstdio>

#include "remat.h"
using namespace remat;

// Anything thrown: one "error: ..." line, exit 1; and exit 1 when stdout could not be written, e.g.
// a full disk (run_main, engine/core/cli.h).
int main() {
  return run_main([] {
    nn::GPTConfig cfg;  // GPT-2 XL: 1.56e9 parameters
    cfg.n_layer = 48, cfg.n_embd = 1600, cfg.n_head = 25, cfg.block_size = 1024, cfg.vocab_size = 50257;
    cfg.options = TensorOptions().device(kMeta);  // shapes, no values, no memory
    nn::GPT model(cfg);
    model.set_checkpointing(nn::ActivationCheckpointing::full());
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-4));
    Tensor idx = empty({4, 1024}, TensorOptions().dtype(kLong).device(kMeta));
    for (int step = 1; step <= 2; ++step) {  // step 1 also creates AdamW's state
      opt.zero_grad();
      MemoryTracker tracker(Device{kMeta});
      model.forward(idx, idx).loss.backward();
      opt.step();
      std::printf("step %d: peak %.2f GiB =", step, tracker.peak() / 1073741824.0);
      for (auto [category, bytes] : tracker.at_peak()) std::printf(" %s %.2f", toString(category), bytes / 1073741824.0);
      std::printf("\n");
    }
    return 0;
  });
}
