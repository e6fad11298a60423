// The cost model's default machine (no PyTorch counterpart: torch/distributed/_tools/
// runtime_estimator.py reads a GPU's peak from a table of known devices): the CPU's FP32 FMA
// peak and copy bandwidth, measured once per process on first use and cached, and a CUDA
// device's documented figures.
//
//   const MachinePeaks& m = cpu_machine_peaks();   // measured on the first call, then cached
//   RuntimeEstimator est(EstimateMode::kCostModel, Device{kCPU});   // est.peak_flops() == m.peak_flops
#pragma once

#include <cstdint>

#include "engine/core/device.h"
#include "engine/core/scalar_type.h"

namespace remat {

struct MachinePeaks {
  double peak_flops = 0;  // FLOP/s (an FMA counts as two)
  double bandwidth = 0;   // bytes/s, read plus written
};

// The machine this process runs on, measured on the first call and cached: every later call,
// from any thread, returns the same object. Each figure is one thread's, the fastest of several
// short samples (so other load on the machine lowers it little), times omp_get_max_threads(); the
// measurement takes about 10 ms on an idle machine, 30-40 on a busy one.
const MachinePeaks& cpu_machine_peaks();

// The roofline's defaults (RuntimeEstimator and PlannerOptions with peak_flops, bandwidth 0):
// cpu_machine_peaks() for the CPU (and Meta); for CUDA, the H200 SXM's documented figures
// (NVIDIA's datasheet, dense): 67 TFLOP/s in f32, the CUDA cores' (cuBLAS with TF32 off, the
// default as in PyTorch), and 4.8 TB/s of HBM3e.
MachinePeaks default_machine_peaks(Device device);
constexpr double kCUDAPeakFlops = 6.7e13, kCUDABandwidth = 4.8e12;
// An H200's dense peak for the arithmetic of one dtype: f32 on the CUDA cores (kCUDAPeakFlops),
// bf16 and f16 on the tensor cores (989 TFLOP/s), f64 on the FP64 tensor cores (67 TFLOP/s).
// The roofline prices each CUDA call at the peak of its inputs' dtype, so that a bf16 plan does
// not take a matmul for 15 times dearer than it is, nor an f32 plan for 15 times cheaper.
constexpr double kCUDAPeakFlopsBF16 = 9.89e14, kCUDAPeakFlopsF64 = 6.7e13;
double cuda_peak_flops(ScalarType dtype);

// The link between a CUDA device and pinned host memory, bytes/s each way, what the planner prices
// an offload's transfers at (PlannerOptions::host_link_bandwidth 0). On a GPU: measured on the
// first call (measure_host_link_bandwidth, 64 MiB each way, the slower direction) and cached for
// the process. On the emulated device, which has no link: kH200HostLinkBandwidth, PCIe 5.0 x16's
// per-direction figure (32 GT/s on 16 lanes, 128b/130b), an H200 SXM's host link, labelled as the
// datasheet's, not a measurement. Throws CheckpointError for a device that does not offload (the
// CPU), naming it.
constexpr double kH200HostLinkBandwidth = 6.3e10;
double default_host_link_bandwidth(Device device);
// "measured" or "PCIe 5.0 x16 datasheet (emulated device: no link)": where the figure above comes from.
const char* host_link_bandwidth_source(Device device);
// One measurement, not cached: `bytes` copied from `device` to pinned host memory and back through
// the offload hooks (checkpoint/offload.h), the fastest of `samples`, the slower direction.
double measure_host_link_bandwidth(Device device, int64_t bytes, int samples);

// One measurement, not cached. FLOP/s of `threads` threads each running 12 independent FMA
// chains on the widest vectors the build targets (fma_isa()), the fastest of `samples` runs of
// `iters` loop trips after a warm-up; on a build without AVX2/AVX-512 FMA, separate multiplies
// and adds on 16-byte vectors. time_limit_s > 0 stops sampling once that much time has passed
// (after one timed run at least).
double measure_fma_peak_flops(int threads, int64_t iters, int samples, double time_limit_s = 0);
const char* fma_isa();  // "AVX-512", "AVX2", or "none"
// Bytes per second (read plus written) of `threads` threads copying `floats` floats between two
// buffers touched beforehand: the fastest of `samples` copies. What a memory-bound op can reach.
double measure_copy_bandwidth(int threads, int64_t floats, int samples, double time_limit_s = 0);

}  // namespace remat
