// The runtime estimator (see runtime_estimator.h).
#include "checkpoint/runtime_estimator.h"

#include <algorithm>
#include <sstream>

#include "checkpoint/output_storage.h"
#include "checkpoint/stats_detail.h"
#include "engine/autograd/grad_mode.h"
#include "engine/core/clock.h"
#include "engine/core/cuda_hooks.h"
#include "engine/core/generator.h"
#include "engine/dispatch/dispatch_mode.h"
#include "ops/functions.h"

namespace remat {

const char* toString(EstimateMode mode) {
  return mode == EstimateMode::kBenchmark ? "operator-level-benchmark" : "operator-level-cost-model";
}

namespace {

void describe(std::ostream& os, const Tensor& t) {
  if (!t.defined()) {
    os << "undefined";
    return;
  }
  os << toString(t.dtype()) << t.sizes() << ":" << t.strides();
}

// A fresh tensor on `device` with t's sizes, strides, offset and dtype. Floating values (and
// complex ones' parts) are uniform in [0, 1) (no denormals, no NaN); integer and bool ones are 0, a valid index and a
// mask that keeps everything, so that index and mask arguments stay in range.
Tensor fresh_like(const Tensor& t, Device device, Generator* gen) {
  if (!t.defined()) return t;
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) extent = 0;
    if (extent > 0) extent += (t.sizes()[d] - 1) * t.strides()[d];
  }
  const TensorOptions o = TensorOptions().dtype(t.dtype()).device(device);
  Tensor base;
  if (isFloatingType(t.dtype()))
    base = rand({extent}, TensorOptions().dtype(kFloat).device(device), gen).to(t.dtype());
  else if (isComplexType(t.dtype()))  // real and imaginary parts uniform in [0, 1)
    base = view_as_complex(
        rand({extent, 2}, TensorOptions().dtype(kFloat).device(device), gen).to(toRealValueType(t.dtype())));
  else
    base = zeros({extent}, o);
  return as_strided(base, t.sizes(), t.strides(), t.storage_offset());
}

}  // namespace

RuntimeEstimator::RuntimeEstimator(EstimateMode mode, Device device, double peak_flops, double bandwidth)
    : mode_(mode),
      device_(device),
      peak_flops_(peak_flops > 0 ? peak_flops : default_machine_peaks(device).peak_flops),
      bandwidth_(bandwidth > 0 ? bandwidth : default_machine_peaks(device).bandwidth),
      peak_by_dtype_(device.is_cuda() && peak_flops == 0) {
  REMAT_CHECK(peak_flops >= 0 && bandwidth >= 0, "RuntimeEstimator: peak_flops and bandwidth must be >= 0 (0: the "
              "defaults), got ", peak_flops, " and ", bandwidth);
  if (mode == EstimateMode::kBenchmark) {
    REMAT_CHECK(!device.is_meta(), "RuntimeEstimator: operator-level-benchmark times calls on a real device; ",
                "nothing runs on meta (benchmark on cpu or cuda, or use operator-level-cost-model)");
    REMAT_CHECK(!device.is_cuda() || cuda_is_available(), "RuntimeEstimator: operator-level-benchmark on cuda needs "
                "a CUDA device, and none is available (use operator-level-cost-model to plan for one without it)");
  }
}

std::string RuntimeEstimator::call_signature(const OperatorHandle& op, const std::vector<IValue>& args) {
  std::ostringstream os;
  os << op.name() << "(";
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& a = args[i];
    if (i > 0) os << ", ";
    if (a.isTensor()) describe(os, a.toTensor());
    else if (a.isTensorList()) {
      os << "[";
      for (const Tensor& t : a.toTensorListRef()) describe(os, t), os << " ";
      os << "]";
    } else if (a.isNone()) os << "None";
    else if (a.isDouble()) os << a.toDouble();
    else if (a.isInt()) os << a.toInt();
    else if (a.isBool()) os << (a.toBool() ? "True" : "False");
    else if (a.isIntList()) os << a.toIntListRef();
    else if (a.isString()) os << "'" << a.toStringRef() << "'";
    else if (a.isScalarType()) os << toString(a.toScalarType());
    else if (a.isDevice()) os << toString(a.toDevice().type);
    else if (a.isGenerator()) os << "generator";
    else os << "?";
  }
  os << ")";
  return os.str();
}

double RuntimeEstimator::estimate(const OperatorHandle& op, const std::vector<IValue>& args,
                                  const std::vector<IValue>& outputs) {
  const int64_t out_bytes = new_output_bytes(args, outputs);
  if (out_bytes == 0) return 0;  // views: nothing computed
  if (mode_ == EstimateMode::kCostModel) {
    const double flops = stats_detail::op_flops(op, args, outputs);
    const double moved = static_cast<double>(stats_detail::bytes_of(args) + out_bytes);
    double peak = peak_flops_;
    if (peak_by_dtype_) {
      for (const IValue& a : args) {
        if (a.isTensor() && a.toTensor().defined() && isFloatingType(a.toTensor().dtype())) {
          peak = cuda_peak_flops(a.toTensor().dtype());
          break;
        }
      }
    }
    return std::max(flops / peak, moved / bandwidth_);
  }
  std::string key = call_signature(op, args);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = measured_.find(key);
  if (it != measured_.end()) return it->second;
  const double seconds = benchmark(op, args);
  measured_.emplace(std::move(key), seconds);
  return seconds;
}

// The call on fresh tensors, outside every dispatch mode (a planner's dry run calls this from
// inside SAC's) and without autograd (a benchmark saves nothing), with a generator of its own
// (the caller's random streams do not move). One warm-up run, then runs until at least 3 and
// 5 ms, at most 25 runs or 50 ms; the median.
double RuntimeEstimator::benchmark(const OperatorHandle& op, const std::vector<IValue>& args) {
  const double t_start = now_seconds();
  DisableDispatchModesGuard no_modes;
  autograd::NoGradGuard no_grad;
  Generator gen(1234, device_.is_cuda() ? device_ : Device{kCPU});
  std::vector<IValue> fresh;
  fresh.reserve(args.size());
  const std::vector<Argument>& schema_args = op.schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& a = args[i];
    const bool generator_arg = i < schema_args.size() && schema_args[i].type.rfind("Generator", 0) == 0;
    if (generator_arg) fresh.emplace_back(&gen);  // also for None, which means the default generator
    else if (a.isTensor()) fresh.emplace_back(fresh_like(a.toTensor(), device_, &gen));
    else if (a.isTensorList()) {
      std::vector<Tensor> list;
      for (const Tensor& t : a.toTensorListRef()) list.push_back(fresh_like(t, device_, &gen));
      fresh.emplace_back(std::move(list));
    } else fresh.push_back(a);
  }
  auto sync = [&] {
    if (device_.is_cuda()) cuda_synchronize();
  };
  auto run_once = [&] {
    sync();
    const double t0 = now_seconds();
    { std::vector<IValue> out = op.call(fresh); }  // outputs freed inside the timing, as in a rerun
    sync();
    return now_seconds() - t0;
  };
  try {
    run_once();  // warm-up: caches, a GEMM primitive made for this shape
    std::vector<double> runs;
    double total = 0;
    while (runs.size() < 25 && total < 0.05 && (runs.size() < 3 || total < 0.005)) {
      runs.push_back(run_once());
      total += runs.back();
    }
    std::nth_element(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(runs.size() / 2), runs.end());
    benchmark_seconds_ += now_seconds() - t_start;
    return runs[runs.size() / 2];
  } catch (const Error& e) {
    throw Error(std::string("RuntimeEstimator: operator-level-benchmark of ") + call_signature(op, args) +
                " failed on " + toString(device_.type) + ": " + e.what());
  }
}

}  // namespace remat
