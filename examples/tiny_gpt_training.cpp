// Mirrors nanoGPT's train.py and data/shakespeare_char/prepare.py (character-level GPT training),
// with remat's checkpointing strategies as one flag.
#include "examples/tiny_gpt_training.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <sys/stat.h>

namespace remat::examples {

// ---------------------------------------------------------------------------------------------
// flags
// ---------------------------------------------------------------------------------------------

const std::vector<std::pair<std::string, std::string>>& checkpoint_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"none", "keep every activation"},
      {"full", "checkpoint every block (non-reentrant)"},
      {"full-reentrant", "checkpoint every block (reentrant)"},
      {"every2", "checkpoint blocks 0, 2, 4, ..."},
      {"sac-mm", "selective: save matmul outputs, recompute the rest"},
      {"sac-every-other-mm", "selective: save every other matmul output (torchtitan)"},
      {"sac-no-fc2", "selective: save matmul outputs except the MLP's fc2"},
  };
  return names;
}

nn::ActivationCheckpointing checkpointing_from_name(const std::string& name) {
  using AC = nn::ActivationCheckpointing;
  if (name == "none") return AC::none();
  if (name == "full") return AC::full();
  if (name == "full-reentrant") return AC::full(/*use_reentrant=*/true);
  if (name == "every2") return AC::every_nth(2);
  if (name == "sac-mm") return AC::selective(policies::save_matmuls());
  if (name == "sac-every-other-mm") return AC::selective(policies::save_every_other({"aten::mm", "aten::addmm", "aten::bmm"}));
  if (name == "sac-no-fc2")
    return AC::selective(policies::compose({policies::recompute_scopes({"*.mlp.fc2"}), policies::save_matmuls()}));
  std::string known;
  for (const auto& [n, what] : checkpoint_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("--checkpoint: unknown strategy '" + name + "' (one of: " + known + ")");
}

std::string usage() {
  TrainOptions d;
  std::ostringstream os;
  os << "usage: train_tiny_gpt [flags]\n"
     << "Trains a character-level GPT with remat and samples from it.\n\n"
     << "  --data PATH        text file to train on (default: a generated corpus of a few KB)\n"
     << "  --checkpoint NAME  activation checkpointing (default: " << d.checkpoint << ")\n";
  for (const auto& [n, what] : checkpoint_names()) os << "                       " << n << ": " << what << "\n";
  os << "  --steps N          training steps (default: " << d.steps << ")\n"
     << "  --seed N           seed of the weights, batches and sampling (default: " << d.seed << ")\n"
     << "  --batch N          sequences per batch (default: " << d.batch << ")\n"
     << "  --seq N            context length in characters (default: " << d.seq << ")\n"
     << "  --layers N         transformer blocks (default: " << d.layers << ")\n"
     << "  --embd N           embedding width (default: " << d.embd << ")\n"
     << "  --heads N          attention heads; must divide --embd (default: " << d.heads << ")\n"
     << "  --lr X             AdamW learning rate (default: " << d.lr << ")\n"
     << "  --sample N         characters to generate after training (default: " << d.sample << ")\n"
     << "  --budget SIZE      plan checkpointing to fit a peak of SIZE (e.g. 40MiB; a dry run on the Meta\n"
     << "                     device chooses what each block keeps); instead of --checkpoint\n"
     << "  --help             this text\n";
  return os.str();
}

TrainOptions parse_args(const std::vector<std::string>& args) {
  TrainOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    static const std::vector<std::string> known = {"--data",  "--checkpoint", "--steps", "--seed",
                                                   "--batch", "--seq",        "--layers", "--embd",
                                                   "--heads", "--lr",         "--sample", "--budget"};
    if (std::find(known.begin(), known.end(), flag) == known.end()) throw UsageError("unknown flag '" + flag + "'");
    if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      value = args[++i];
    }
    if (flag == "--data") {
      if (value.empty()) throw UsageError("--data: empty path");
      o.data_path = value;
    } else if (flag == "--checkpoint") {
      checkpointing_from_name(value);  // throws for an unknown name
      o.checkpoint = value;
    } else if (flag == "--steps") {
      o.steps = parse_int(flag, value, 1);
    } else if (flag == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(flag, value, 0));
    } else if (flag == "--batch") {
      o.batch = parse_int(flag, value, 1);
    } else if (flag == "--seq") {
      o.seq = parse_int(flag, value, 1);
    } else if (flag == "--layers") {
      o.layers = parse_int(flag, value, 1);
    } else if (flag == "--embd") {
      o.embd = parse_int(flag, value, 1);
    } else if (flag == "--heads") {
      o.heads = parse_int(flag, value, 1);
    } else if (flag == "--lr") {
      o.lr = parse_float(flag, value, 0, 10, "a finite number > 0 and <= 10");
      if (o.lr == 0) throw UsageError("--lr: expected a finite number > 0 and <= 10, got '" + value + "'");
    } else if (flag == "--sample") {
      o.sample = parse_int(flag, value, 0);
    } else if (flag == "--budget") {
      o.budget_bytes = parse_byte_size(flag, value);
    }
  }
  REMAT_CHECK(o.budget_bytes == 0 || o.checkpoint == "none", "--budget plans the checkpointing itself; it cannot be "
              "combined with --checkpoint ", o.checkpoint);
  REMAT_CHECK(o.embd % o.heads == 0, "--heads (", o.heads, ") must divide --embd (", o.embd, ")");
  return o;
}

// ---------------------------------------------------------------------------------------------
// data
// ---------------------------------------------------------------------------------------------

std::string generate_corpus(size_t min_bytes) {
  static const char* const subjects[] = {"the cat",   "a dog",       "my friend",  "the old man",
                                         "the bird",  "our teacher", "the fox",    "a child"};
  static const char* const verbs[] = {"sees", "likes", "finds", "follows", "watches", "draws", "remembers", "carries"};
  static const char* const objects[] = {"the red ball", "a small house", "the river", "an apple",
                                        "the green hill", "a wooden box", "the moon",  "a long road"};
  static const char* const endings[] = {"", " every morning", " in the rain", " before dinner", " at night",
                                        " with great care"};
  std::mt19937_64 rng(20240229);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  std::string text;
  int64_t line = 1;
  while (text.size() < min_bytes) {
    if (pick(6) == 0) {
      // A counting line: "3, 4, 5, 6."
      uint64_t start = pick(10);
      for (uint64_t k = 0; k < 4; ++k) text += std::to_string(start + k) + (k < 3 ? ", " : ".\n");
      continue;
    }
    std::string line_text = std::to_string(line++) + ". ";
    size_t sentences = 1 + pick(2);
    for (size_t s = 0; s < sentences; ++s) {
      std::string subject = subjects[pick(8)];
      subject[0] = static_cast<char>(subject[0] - 'a' + 'A');
      line_text += subject + " " + verbs[pick(8)] + " " + objects[pick(8)] + endings[pick(6)] + ".";
      line_text += s + 1 < sentences ? " " : "\n";
    }
    text += line_text;
  }
  return text;
}

std::string read_text_file(const std::string& path) {
  // A folder, a FIFO or a device is refused before it is opened: reading one fails or never ends.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError("--data: cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UsageError("--data: '" + path + "' is not a regular file (a folder, FIFO or device)");
  std::ifstream in(path, std::ios::binary);
  REMAT_CHECK(in.good(), "--data: cannot open '", path, "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REMAT_CHECK(!in.bad(), "--data: error while reading '", path, "'");
  return text;
}

CharVocab::CharVocab(const std::string& text) {
  bool seen[256] = {};
  for (char c : text) seen[static_cast<unsigned char>(c)] = true;
  for (int b = 0; b < 256; ++b) {
    if (!seen[b]) continue;
    index_[static_cast<char>(b)] = static_cast<int64_t>(chars_.size());
    chars_.push_back(static_cast<char>(b));
  }
}

std::vector<int64_t> CharVocab::encode(const std::string& s) const {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (char c : s) {
    auto it = index_.find(c);
    REMAT_CHECK(it != index_.end(), "CharVocab: character ", static_cast<int>(static_cast<unsigned char>(c)),
                " is not in the vocabulary");
    out.push_back(it->second);
  }
  return out;
}

std::string CharVocab::decode(const std::vector<int64_t>& tokens) const {
  std::string out;
  for (int64_t t : tokens) {
    REMAT_CHECK(t >= 0 && t < size(), "CharVocab: token ", t, " is out of range [0, ", size(), ")");
    out.push_back(chars_[static_cast<size_t>(t)]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// training
// ---------------------------------------------------------------------------------------------

TrainResult train(const TrainOptions& o, const std::string& text, const std::function<void(const StepInfo&)>& on_step) {
  REMAT_CHECK(static_cast<int64_t>(text.size()) > o.seq + 1, "train: the text has ", text.size(),
              " characters; --seq ", o.seq, " needs at least ", o.seq + 2);
  CharVocab vocab(text);
  const std::vector<int64_t> data = vocab.encode(text);

  nn::GPTConfig cfg;
  cfg.vocab_size = vocab.size();
  cfg.block_size = o.seq;
  cfg.n_layer = o.layers;
  cfg.n_head = o.heads;
  cfg.n_embd = o.embd;
  cfg.dropout = 0.0;
  cfg.seed = o.seed;
  // nanoGPT's shakespeare_char settings: beta2 = 0.99 for a small model and few tokens per step.
  const optim::AdamWOptions adamw = optim::AdamWOptions(o.lr).betas({0.9, 0.99}).weight_decay(0.1);
  auto step = [](nn::GPT& model, optim::AdamW& opt, const Tensor& idx, const Tensor& targets) {
    opt.zero_grad();
    nn::GPTOutput out = model.forward(idx, targets);
    out.loss.backward();
    nn::utils::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    return out.loss;
  };

  TrainResult result;
  nn::ActivationCheckpointing checkpointing = checkpointing_from_name(o.checkpoint);
  if (o.budget_bytes > 0) {
    // The same loop as below, built on `device`: the planner runs it on Meta (no compute). Two
    // steps: from the second on, AdamW's moments are alive during forward and backward too.
    PlannedStep planned = [&](const PolicyFn& policy, Device device) {
      nn::GPTConfig c = cfg;
      c.options = TensorOptions().device(device);
      nn::GPT m(c);
      m.set_checkpointing(nn::ActivationCheckpointing::selective(policy));
      optim::AdamW opt(m.parameters(), adamw);
      TensorOptions lo = TensorOptions().dtype(kLong).device(device);
      for (int i = 0; i < 2; ++i) step(m, opt, empty({o.batch, o.seq}, lo), empty({o.batch, o.seq}, lo));
    };
    CheckpointPlan plan = plan_checkpointing(planned, PlannerOptions{o.budget_bytes});
    checkpointing = nn::ActivationCheckpointing::planned(plan);
    result.plan = plan.summary();
    result.predicted_peak_bytes = plan.predicted_peak_bytes;
  }
  reset_peak_memory_stats();
  nn::GPT model(cfg);
  model.set_checkpointing(checkpointing);
  optim::AdamW opt(model.parameters(), adamw);
  result.num_parameters = model.num_parameters();
  std::mt19937_64 rng(o.seed);
  const uint64_t windows = static_cast<uint64_t>(data.size()) - static_cast<uint64_t>(o.seq);
  for (int64_t step_no = 1; step_no <= o.steps; ++step_no) {
    const double start = now_seconds();
    std::vector<double> x, y;
    x.reserve(static_cast<size_t>(o.batch * o.seq));
    y.reserve(static_cast<size_t>(o.batch * o.seq));
    for (int64_t b = 0; b < o.batch; ++b) {
      const size_t offset = static_cast<size_t>(rng() % windows);
      for (int64_t t = 0; t < o.seq; ++t) {
        x.push_back(static_cast<double>(data[offset + static_cast<size_t>(t)]));
        y.push_back(static_cast<double>(data[offset + static_cast<size_t>(t) + 1]));
      }
    }
    Tensor idx = from_vector(x, {o.batch, o.seq}, kLong), targets = from_vector(y, {o.batch, o.seq}, kLong);

    const double loss = step(model, opt, idx, targets).item();
    // A diverged run stops here: every later step would be NaN too.
    REMAT_CHECK(std::isfinite(loss), "train: the loss became ", loss, " at step ", step_no, " of ", o.steps,
                " (diverged; a smaller --lr than ", o.lr, "?)");
    result.losses.push_back(loss);
    const double seconds = now_seconds() - start;
    if (on_step) on_step(StepInfo{step_no, o.steps, loss, seconds});
  }
  result.peak_bytes = max_memory_allocated();

  if (o.sample > 0) {
    Generator gen(o.seed);
    Tensor prompt = from_vector({static_cast<double>(data[0])}, {1, 1}, kLong);
    Tensor generated = model.generate(prompt, o.sample, /*temperature=*/0.8, &gen);
    std::vector<int64_t> tokens;
    for (double t : generated.to_vector()) tokens.push_back(static_cast<int64_t>(t));
    result.sample = vocab.decode(tokens);
  }
  return result;
}

}  // namespace remat::examples
