// The README's "checkpointing in one line", compiled (nanoGPT's train.py loop, shortened): a GPT
// trained for a few steps with selective activation checkpointing, then one region checkpointed
// by hand as torch.utils.checkpoint.checkpoint does.
#include <cstdio>
#include <vector>

#include "remat.h"
using namespace remat;

// Anything thrown: one "error: ..." line, exit 1; and exit 1 when stdout could not be written, e.g.
// a full disk (run_main, engine/core/cli.h).
int main() {
  return run_main([] {
    nn::GPTConfig config;  // nanoGPT-sized defaults: 4 layers, d_model 256, vocab 65
    config.n_layer = 2;
    nn::GPT model(config);
    model.set_checkpointing(nn::ActivationCheckpointing::selective(policies::save_matmuls()));
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-4));

    // A fixed batch of token ids: Long [B, T]; the targets are the next tokens.
    std::vector<double> ids(4 * 33);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<double>((i * 7) % config.vocab_size);
    Tensor tokens = from_vector(ids, {4, 33}, kLong);
    Tensor idx = tokens.slice(1, 0, 32).contiguous(), targets = tokens.slice(1, 1, 33).contiguous();
    for (int step = 0; step < 3; ++step) {
      auto out = model.forward(idx, targets);
      out.loss.backward();
      opt.step();
      opt.zero_grad();
      std::printf("step %d  loss %.4f\n", step, out.loss.item());
    }

    // One region by hand: keep x, recompute gelu(linear(x)) in backward.
    Tensor w1 = randn({64, 32}).requires_grad_(), b1 = zeros({64}).requires_grad_(), x = randn({8, 32});
    Tensor y = checkpoint([&](const Tensor& h) { return gelu(linear(h, w1, b1)); }, x);
    y.sum().backward();
    std::printf("sum of grad of w1: %.4f\n", w1.grad().sum().item());
    return 0;
  });
}
