// Mirrors torch/distributed/_tools/runtime_estimator.py (RuntimeEstimator, which SACEstimator uses
// to price recomputation): how long one op call takes on a device. Two modes, as PyTorch names
// them:
//   operator-level-cost-model  a roofline: max(FLOPs / peak FLOP/s, bytes moved / bandwidth);
//   operator-level-benchmark   the call run for real on the device, on fresh tensors of its
//                              arguments' sizes, strides and dtypes, and timed (the median of a
//                              few runs after a warm-up).
// The call may come from a dry run on the Meta device: only its arguments' geometry is read.
// A benchmark is made once per distinct call (op, argument geometry, other arguments) and looked
// up after, so one estimator shared by several plans measures each call once. One estimator may
// serve plans made in several threads at once.
//
//   RuntimeEstimator est(EstimateMode::kBenchmark, Device{kCPU});
//   double s = est.estimate(op, args, outputs);   // seconds; 0 for a call that only makes views
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/cost_model_defaults.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

enum class EstimateMode {
  kCostModel,  // "operator-level-cost-model"
  kBenchmark,  // "operator-level-benchmark"
};
const char* toString(EstimateMode mode);  // PyTorch's name

class RuntimeEstimator {
 public:
  // peak_flops, bandwidth: the roofline's machine; 0: default_machine_peaks(device)
  // (checkpoint/cost_model_defaults.h: on the CPU, measured once per process on first use; on
  // CUDA, a call is priced at cuda_peak_flops of its inputs' dtype).
  // kBenchmark on CUDA needs a CUDA device (it throws remat::Error otherwise); on Meta it is
  // meaningless (nothing runs) and throws too.
  RuntimeEstimator(EstimateMode mode, Device device, double peak_flops = 0, double bandwidth = 0);

  // Seconds one call of `op` with these arguments takes on the device. `outputs` are what the
  // call returned (the roofline reads their bytes; a call whose outputs all alias its inputs is
  // a view and costs 0 in both modes).
  double estimate(const OperatorHandle& op, const std::vector<IValue>& args, const std::vector<IValue>& outputs);

  EstimateMode mode() const { return mode_; }
  Device device() const { return device_; }
  double peak_flops() const { return peak_flops_; }
  double bandwidth() const { return bandwidth_; }
  int64_t benchmarked_calls() const {  // distinct calls timed
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(measured_.size());
  }
  double benchmark_seconds() const {  // wall time spent timing them
    std::lock_guard<std::mutex> lock(mutex_);
    return benchmark_seconds_;
  }

  // The key a benchmark is stored under: "aten::mm(f32[1024, 256]:[256, 1], ...)".
  static std::string call_signature(const OperatorHandle& op, const std::vector<IValue>& args);

 private:
  double benchmark(const OperatorHandle& op, const std::vector<IValue>& args);

  EstimateMode mode_;
  Device device_;
  double peak_flops_, bandwidth_;
  bool peak_by_dtype_;  // CUDA with the default peak: cuda_peak_flops(the call's dtype)
  mutable std::mutex mutex_;  // guards the two below (one call timed at a time)
  std::unordered_map<std::string, double> measured_;
  double benchmark_seconds_ = 0;
};

}  // namespace remat
