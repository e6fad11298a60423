// Mirrors nanoGPT's train.py + sample.py (shakespeare_char): trains a character-level GPT with
// remat and samples from it. Losses go to stdout, a progress bar to stderr.
//
//   bazel run //examples:train_tiny_gpt -- --checkpoint sac-mm --steps 100
//   bazel run //examples:train_tiny_gpt -- --data input.txt --layers 4 --embd 128
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "examples/tiny_gpt_training.h"

namespace {

// "[#########-----------] 12/60 loss 2.3456 0.21 s/step", redrawn in place.
void draw_progress(const remat::examples::StepInfo& s) {
  const int width = 30;
  const int filled = static_cast<int>(static_cast<double>(width) * static_cast<double>(s.step) /
                                      static_cast<double>(s.steps));
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '-');
  std::fprintf(stderr, "\r[%s] %lld/%lld loss %.4f %.2f s/step", bar.c_str(), static_cast<long long>(s.step),
               static_cast<long long>(s.steps), s.loss, s.seconds);
  if (s.step == s.steps) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace remat::examples;
  TrainOptions options;
  try {
    options = parse_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const remat::Error& e) {  // every parse error is bad usage
    std::cerr << "error: " << e.what() << " (--help for the flags)\n";
    return 2;
  }
  if (options.help) {
    std::cout << usage();
    return 0;
  }
  // Anything thrown below: one "error: ..." line, exit 1 (remat::run_main, engine/core/cli.h).
  return remat::run_main([&] {
    const std::string text = options.data_path.empty() ? generate_corpus() : read_text_file(options.data_path);
    std::cout << "data: " << (options.data_path.empty() ? "generated corpus" : options.data_path) << ", "
              << text.size() << " characters, " << CharVocab(text).size() << " distinct\n"
              << "model: " << options.layers << " layers, " << options.embd << " wide, " << options.heads
              << " heads, context " << options.seq << "; checkpoint: "
              << (options.budget_bytes > 0 ? "planned for a budget of " + std::to_string(options.budget_bytes) + " bytes"
                                           : options.checkpoint)
              << "\n"
              << "training: " << options.steps << " steps of " << options.batch << " sequences, AdamW lr "
              << options.lr << ", seed " << options.seed << "\n";
    TrainResult r = train(options, text, [](const StepInfo& s) {
      std::printf("step %lld loss %.6f\n", static_cast<long long>(s.step), s.loss);
      std::fflush(stdout);
      draw_progress(s);
    });
    std::printf("parameters: %lld\npeak memory during training: %.2f MiB\n",
                static_cast<long long>(r.num_parameters), static_cast<double>(r.peak_bytes) / (1024.0 * 1024.0));
    if (!r.plan.empty()) {
      std::printf("%s", r.plan.c_str());
      std::printf("predicted peak %lld bytes, measured %lld bytes, budget %lld bytes\n",
                  static_cast<long long>(r.predicted_peak_bytes), static_cast<long long>(r.peak_bytes),
                  static_cast<long long>(options.budget_bytes));
    }
    if (!r.sample.empty()) std::cout << "sample:\n" << r.sample << "\n";
    std::cout.flush();
    return std::cout.good() ? 0 : 1;
  });
}
