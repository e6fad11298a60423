// Tests examples/tiny_gpt_training.cpp: flag parsing and its errors, the generated corpus and
// the tokenizer, and that the non-reentrant checkpointing strategies train with bitwise
// identical losses (reentrant within 1e-6).
#include <catch2/catch.hpp>
#include <cmath>

#include "examples/tiny_gpt_training.h"

using namespace remat;
using namespace remat::examples;
using Catch::Contains;

TEST_CASE("parse_args reads every flag, in both spellings", "[examples]") {
  TrainOptions o = parse_args({"--data", "in.txt", "--checkpoint=sac-mm", "--steps", "7", "--seed=3", "--batch", "2",
                               "--seq", "16", "--layers", "3", "--embd", "24", "--heads=6", "--lr", "1e-3",
                               "--sample", "0"});
  CHECK(o.data_path == "in.txt");
  CHECK(o.checkpoint == "sac-mm");
  CHECK(o.steps == 7);
  CHECK(o.seed == 3);
  CHECK(o.batch == 2);
  CHECK(o.seq == 16);
  CHECK(o.layers == 3);
  CHECK(o.embd == 24);
  CHECK(o.heads == 6);
  CHECK(o.lr == 1e-3);
  CHECK(o.sample == 0);
  CHECK_FALSE(o.help);
  CHECK(parse_args({"--help"}).help);
  TrainOptions d = parse_args({});
  CHECK(d.checkpoint == "none");
  CHECK(d.data_path.empty());
  for (const auto& [name, what] : checkpoint_names()) {
    CHECK(parse_args({"--checkpoint", name}).checkpoint == name);
    CHECK(usage().find(name) != std::string::npos);
  }
}

TEST_CASE("parse_args errors name the flag and the value", "[examples]") {
  REQUIRE_THROWS_WITH(parse_args({"--stepz", "3"}), Contains("unknown flag '--stepz'"));
  REQUIRE_THROWS_WITH(parse_args({"steps"}), Contains("unknown flag 'steps'"));
  REQUIRE_THROWS_WITH(parse_args({"--steps"}), Contains("--steps needs a value"));
  REQUIRE_THROWS_WITH(parse_args({"--steps", "ten"}), Contains("--steps: expected an integer >= 1, got 'ten'"));
  REQUIRE_THROWS_WITH(parse_args({"--steps", "5x"}), Contains("--steps: expected an integer >= 1, got '5x'"));
  REQUIRE_THROWS_WITH(parse_args({"--batch", "0"}), Contains("--batch: expected an integer >= 1, got '0'"));
  REQUIRE_THROWS_WITH(parse_args({"--lr", "-0.1"}), Contains("--lr: expected a finite number > 0 and <= 10, got '-0.1'"));
  REQUIRE_THROWS_WITH(parse_args({"--lr="}), Contains("--lr: expected a finite number > 0 and <= 10, got ''"));
  REQUIRE_THROWS_WITH(parse_args({"--checkpoint", "half"}),
                      Contains("--checkpoint: unknown strategy 'half'") && Contains("sac-no-fc2"));
  REQUIRE_THROWS_WITH(parse_args({"--embd", "30", "--heads", "4"}), Contains("--heads (4) must divide --embd (30)"));
}

TEST_CASE("the generated corpus is deterministic and the vocabulary round-trips", "[examples]") {
  std::string a = generate_corpus(), b = generate_corpus();
  CHECK(a == b);
  CHECK(a.size() >= 8192);
  CHECK(a.size() < 8192 + 256);
  CHECK(a.rfind("1. ", 0) == 0);
  CharVocab vocab(a);
  CHECK(vocab.size() > 20);
  CHECK(vocab.size() < 64);
  CHECK(vocab.decode(vocab.encode(a)) == a);
  REQUIRE_THROWS_WITH(vocab.encode("~"), Contains("character 126 is not in the vocabulary"));
  REQUIRE_THROWS_WITH(vocab.decode({vocab.size()}), Contains("out of range"));
}

namespace {
TrainOptions small_run(const std::string& checkpoint) {
  return parse_args({"--checkpoint", checkpoint, "--steps", "3", "--batch", "2", "--seq", "16", "--layers", "4",
                     "--embd", "16", "--heads", "2", "--sample", "0", "--seed", "11"});
}
}  // namespace

TEST_CASE("non-reentrant checkpointing strategies train with bitwise identical losses", "[examples]") {
  const std::string text = generate_corpus();
  TrainResult none = train(small_run("none"), text);
  REQUIRE(none.losses.size() == 3);
  CHECK(none.losses[0] == Approx(std::log(static_cast<double>(CharVocab(text).size()))).margin(0.2));
  for (const char* name : {"full", "every2", "sac-mm", "sac-every-other-mm", "sac-no-fc2"}) {
    INFO(name);
    TrainResult r = train(small_run(name), text);
    CHECK(r.losses == none.losses);  // exact double equality of the float32 losses
  }
  TrainResult reentrant = train(small_run("full-reentrant"), text);
  for (size_t i = 0; i < none.losses.size(); ++i)
    CHECK(std::abs(reentrant.losses[i] - none.losses[i]) <= 1e-6 * std::abs(none.losses[i]));
}

TEST_CASE("train reports each step, samples text and refuses a text shorter than the context", "[examples]") {
  const std::string text = generate_corpus();
  TrainOptions o = small_run("none");
  o.sample = 12;
  std::vector<int64_t> steps;
  TrainResult r = train(o, text, [&](const StepInfo& s) {
    steps.push_back(s.step);
    CHECK(s.steps == 3);
    CHECK(std::isfinite(s.loss));
  });
  CHECK(steps == std::vector<int64_t>{1, 2, 3});
  CHECK(r.sample.size() == 13);  // the one-character prompt, then 12 sampled
  CHECK(r.sample[0] == text[0]);
  CHECK(r.num_parameters > 0);
  CHECK(r.peak_bytes > 0);
  REQUIRE_THROWS_WITH(train(o, std::string(10, 'a')), Contains("the text has 10 characters; --seq 16 needs at least 18"));
}

TEST_CASE("parse_byte_size reads sizes with units; --budget excludes --checkpoint", "[examples]") {
  CHECK(parse_byte_size("--budget", "40MiB") == 40 << 20);
  CHECK(parse_byte_size("--budget", "1.5GiB") == int64_t{3} << 29);
  CHECK(parse_byte_size("--budget", "800KB") == 800000);
  CHECK(parse_byte_size("--budget", "65536") == 65536);
  CHECK(parse_args({"--budget", "2MiB"}).budget_bytes == 2 << 20);
  REQUIRE_THROWS_WITH(parse_args({"--budget", "lots"}),
                      Contains("--budget: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got 'lots'"));
  REQUIRE_THROWS_WITH(parse_args({"--budget", "4XB"}), Contains("got '4XB'"));
  REQUIRE_THROWS_WITH(parse_args({"--budget", "0MiB"}), Contains("--budget: the size must be positive, got '0MiB'"));
  REQUIRE_THROWS_WITH(parse_args({"--budget", "1MiB", "--checkpoint", "full"}),
                      Contains("--budget plans the checkpointing itself; it cannot be combined with --checkpoint full"));
}

TEST_CASE("--budget trains under a plan: the measured peak is the predicted one, within the budget, same losses",
          "[examples]") {
  const std::string text = generate_corpus();
  TrainResult none = train(small_run("none"), text);
  TrainResult full = train(small_run("full"), text);
  TrainOptions o = small_run("none");
  o.budget_bytes = (none.peak_bytes + full.peak_bytes) / 2;
  TrainResult planned = train(o, text);
  CHECK(planned.peak_bytes == planned.predicted_peak_bytes);
  CHECK(planned.peak_bytes <= o.budget_bytes);
  CHECK(planned.losses == none.losses);
  CHECK_THAT(planned.plan, Contains("checkpoint plan: budget"));
  o.budget_bytes = full.peak_bytes / 4;
  REQUIRE_THROWS_WITH(train(o, text), Contains("no plan fits a budget of"));
}

TEST_CASE("train stops a diverging run at the step whose loss is not finite, naming it", "[examples]") {
  TrainOptions o = small_run("none");
  o.lr = 1e30;  // past --lr's range (at most 10): what a run that diverges looks like, at once
  o.steps = 5;
  std::vector<double> losses;
  REQUIRE_THROWS_WITH(train(o, generate_corpus(), [&](const StepInfo& s) { losses.push_back(s.loss); }),
                      Contains("train: the loss became ") && Contains(" at step ") && Contains(" of 5 (diverged; a smaller --lr than 1e+30?)"));
  for (double l : losses) CHECK(std::isfinite(l));  // every step reported before the stop was finite
}
