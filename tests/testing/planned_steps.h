// Test helper: the training steps the planner's tests plan for (a GPT trained with AdamW, built
// on the device it is given, the batch made inside, as a real loop would), what a step measured,
// and a plan's fingerprint (every figure a plan reports, exactly) for comparing plans.
#pragma once

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::testing {

struct GptShape {
  int64_t batch, seq, embd, heads, vocab, layers;
};

struct StepResult {
  int64_t peak = 0;  // counted from the step's start
  int64_t reserved_peak = 0;  // max_memory_reserved over the step (the cache it started with included)
  double flops = 0;  // recomputed, as checkpoint_stats() counts them
  int64_t activation_bytes = 0;  // allocated by the forward and alive after it (loss and logits included)
  std::vector<double> loss_and_grads;
};

// One training step of a GPT of shape `s` on `device` under `ac`.
inline StepResult gpt_train_step(const GptShape& s, Device device, const nn::ActivationCheckpointing& ac) {
  reset_checkpoint_stats();
  const int64_t start = memory_allocated(device);
  reset_peak_memory_stats(device);
  StepResult r;
  {
    nn::GPTConfig cfg;
    cfg.vocab_size = s.vocab;
    cfg.block_size = s.seq;
    cfg.n_layer = s.layers;
    cfg.n_head = s.heads;
    cfg.n_embd = s.embd;
    cfg.options = TensorOptions().device(device);
    nn::GPT model(cfg);
    model.set_checkpointing(ac);
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-3));
    TensorOptions lo = TensorOptions().dtype(kLong).device(device);
    Tensor idx, targets;
    if (device.is_meta()) {
      idx = empty({s.batch, s.seq}, lo);
      targets = empty({s.batch, s.seq}, lo);
    } else {
      std::vector<double> a, b;
      for (int64_t i = 0; i < s.batch * s.seq; ++i) {
        a.push_back(static_cast<double>((i * 7 + 3) % s.vocab));
        b.push_back(static_cast<double>((i * 5 + 1) % s.vocab));
      }
      idx = from_vector(a, {s.batch, s.seq}, lo);
      targets = from_vector(b, {s.batch, s.seq}, lo);
    }
    const int64_t before_forward = memory_allocated(device);
    nn::GPTOutput out = model.forward(idx, targets);
    r.activation_bytes = memory_allocated(device) - before_forward;
    out.loss.backward();
    opt.step();
    r.peak = max_memory_allocated(device) - start;  // before reading values (which copies)
    r.reserved_peak = max_memory_reserved(device);
    if (!device.is_meta()) {
      r.loss_and_grads.push_back(out.loss.item());
      for (const Tensor& p : model.parameters())
        for (double v : p.to_vector()) r.loss_and_grads.push_back(v);  // after the update: grads and moments agree
    }
  }
  r.flops = checkpoint_stats().total.flops_recomputed;
  return r;
}

inline PlannedStep planned_gpt_step(const GptShape& s) {
  return [s](const PolicyFn& policy, Device device) {
    gpt_train_step(s, device, nn::ActivationCheckpointing::selective(policy));
  };
}

inline bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Every figure of a plan, floating-point ones exactly (hexadecimal), its kept set in order.
inline std::string plan_fingerprint(const CheckpointPlan& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "peak %lld [%lld, %lld] flops %a cost %a dry runs %lld kept",
                static_cast<long long>(p.predicted_peak_bytes), static_cast<long long>(p.recompute_all_peak_bytes),
                static_cast<long long>(p.keep_all_peak_bytes), p.recompute_flops, p.predicted_overhead_seconds,
                static_cast<long long>(p.dry_runs));
  std::string s = buf;
  for (const std::string& k : p.kept) s += " {" + k + "}";
  s += " candidates";
  for (const std::string& k : p.candidates) s += " {" + k + "}";
  return s;
}

// A small SAC step: one region whose calls (mm, then sin) run under each scope of `scopes` in turn,
// and `extra_regions` more regions like it after it; then backward.
inline void scoped_regions(const std::vector<std::string>& scopes, const PolicyFn& policy, Device device,
                           int extra_regions = 0) {
  const TensorOptions o = TensorOptions().device(device);
  Tensor w = empty({8, 8}, o).requires_grad_();
  Tensor h = empty({8, 8}, o);
  CheckpointOptions c;
  c.context_fn = [policy] { return create_selective_checkpoint_contexts(policy); };
  auto body = [scopes, w](const Tensor& in) {
    Tensor t = in;
    for (const std::string& s : scopes) {
      scope named(s);
      t = sin(mm(t, w));
    }
    return t;
  };
  for (int i = 0; i <= extra_regions; ++i) h = checkpoint(body, h, c);
  mean(h).backward();
}

// A row of CheckpointPlan::summary()'s table: the region's name, its kept and dropped calls.
struct SummaryRow {
  std::string name;
  int64_t kept = 0, dropped = 0;
};

// The table's rows, and (header_kept) the count its first line gives.
inline std::vector<SummaryRow> summary_rows(const CheckpointPlan& plan, int64_t* header_kept = nullptr) {
  std::istringstream lines(plan.summary());
  std::vector<SummaryRow> rows;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (header_kept != nullptr && line.rfind("checkpoint plan:", 0) == 0) {
      const size_t end = line.rfind(" kept");
      *header_kept = std::stoll(line.substr(line.rfind(' ', end - 1) + 1));
    }
    if (line.rfind("(kept", 0) == 0) break;
    if (in_table) {
      // name (or "name (x2)"), kept, kept bytes ("0.04 MiB"), dropped, drop bytes, rerun ops, cost
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string word; words >> word;) w.push_back(word);
      SummaryRow row;
      row.name = w.at(0);
      row.kept = std::stoll(w.at(w.size() - 8));
      row.dropped = std::stoll(w.at(w.size() - 5));
      rows.push_back(row);
    }
    if (line.rfind("region ", 0) == 0) in_table = true;
  }
  return rows;
}

// FNV-1a of a string: a short digest to print and compare across processes.
inline uint64_t digest(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace remat::testing
