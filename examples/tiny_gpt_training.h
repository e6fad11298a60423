// The training loop of examples/train_tiny_gpt.cpp as a small library (nanoGPT's train.py with
// its shakespeare_char data preparation, reduced to one process and a few flags), so that the
// binary and tests/examples/tiny_gpt_training_test.cpp run the same code.
//
//   TrainOptions o = parse_args({"--steps", "20", "--checkpoint", "sac-mm"});
//   std::string text = o.data_path.empty() ? generate_corpus() : read_text_file(o.data_path);
//   TrainResult r = train(o, text, [](const StepInfo& s) { ... });   // r.losses, r.sample
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::examples {

struct TrainOptions {
  std::string data_path;          // --data: a text file; empty: generate_corpus()
  std::string checkpoint = "none";  // --checkpoint: see checkpoint_names()
  int64_t steps = 250;            // --steps
  uint64_t seed = 1337;           // --seed: weights, batches and sampling
  int64_t batch = 8;              // --batch
  int64_t seq = 64;               // --seq: context length (block_size)
  int64_t layers = 2;             // --layers
  int64_t embd = 64;              // --embd
  int64_t heads = 4;              // --heads
  double lr = 3e-3;               // --lr (AdamW)
  int64_t sample = 200;           // --sample: characters generated after training
  int64_t budget_bytes = 0;       // --budget: plan checkpointing to fit this peak (e.g. 40MiB); 0: --checkpoint
  bool help = false;              // --help
};

// The usage text (flags, defaults and the checkpoint strategies).
std::string usage();
// Parses command-line arguments (without the program name): `--flag value` or `--flag=value`.
// Throws remat::Error naming the flag for an unknown flag, a missing value or a bad value.
TrainOptions parse_args(const std::vector<std::string>& args);

// The names --checkpoint accepts, and what each one does to the model's blocks.
const std::vector<std::pair<std::string, std::string>>& checkpoint_names();
nn::ActivationCheckpointing checkpointing_from_name(const std::string& name);

// A few KB of structured English-like text from a fixed seed: the same bytes on every run and
// every machine (it uses std::mt19937_64's raw output only, which the standard fixes).
std::string generate_corpus(size_t min_bytes = 8192);
std::string read_text_file(const std::string& path);

// Character-level tokenizer: one token per distinct byte of the text, in byte order.
class CharVocab {
 public:
  explicit CharVocab(const std::string& text);
  int64_t size() const { return static_cast<int64_t>(chars_.size()); }
  std::vector<int64_t> encode(const std::string& s) const;  // throws for a character not in the vocab
  std::string decode(const std::vector<int64_t>& tokens) const;

 private:
  std::string chars_;
  std::map<char, int64_t> index_;
};

struct StepInfo {
  int64_t step;  // 1-based
  int64_t steps;
  double loss;
  double seconds;  // this step's wall time
};

struct TrainResult {
  std::vector<double> losses;   // one per step (the float32 loss, exactly)
  std::string sample;           // generated text, starting from the prompt
  int64_t num_parameters = 0;
  int64_t peak_bytes = 0;       // max_memory_allocated over the training steps
  std::string plan;             // with --budget: the plan's summary (CheckpointPlan::summary)
  int64_t predicted_peak_bytes = 0;  // with --budget: the plan's predicted peak
};

// Trains a GPT on `text` with AdamW (gradients clipped to norm 1) on random windows drawn from a
// generator seeded with options.seed, then samples options.sample characters.
TrainResult train(const TrainOptions& options, const std::string& text,
                  const std::function<void(const StepInfo&)>& on_step = {});

}  // namespace remat::examples
