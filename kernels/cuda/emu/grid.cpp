// A kernel launch on the emulated device: see grid.h.
#include "kernels/cuda/emu/grid.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/cuda/emu/emulation.h"
#include "engine/cuda/emu/schedule.h"

namespace remat::cuda_emu {

namespace {

struct Job {
  const KernelCall* call = nullptr;
  const Schedule* schedule = nullptr;
  uint64_t launch_id = 0;
  uint64_t blocks = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable done;
  std::string error;
};

// Takes blocks of the job until none is left.
void work_on(Job& job) {
  const KernelCall& c = *job.call;
  for (;;) {
    const uint64_t b = job.next.fetch_add(1);
    if (b >= job.blocks) return;
    if (!job.failed.load(std::memory_order_relaxed)) {
      const uint3 index{static_cast<unsigned>(b % c.grid.x), static_cast<unsigned>(b / c.grid.x % c.grid.y),
                        static_cast<unsigned>(b / (static_cast<uint64_t>(c.grid.x) * c.grid.y))};
      std::string e = run_block(c, index, *job.schedule, job.launch_id);
      if (!e.empty()) {
        std::lock_guard<std::mutex> lock(job.mu);
        if (job.error.empty()) job.error = e;
        job.failed = true;
      }
    }
    if (job.finished.fetch_add(1) + 1 == job.blocks) {
      std::lock_guard<std::mutex> lock(job.mu);
      job.done.notify_all();
    }
  }
}

// The worker threads that run blocks beside the stream worker that launched them.
class Pool {
 public:
  Pool() {
    const char* env = std::getenv("REMAT_CUDA_EMU_THREADS");
    int n = env != nullptr && *env != '\0' ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
    if (n < 1) n = 1;
    for (int i = 0; i < n - 1; ++i) std::thread([this] { loop(); }).detach();  // the launcher is the n-th
  }
  void post(Job* job) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
    cv_.notify_all();
  }
  void retire(Job* job) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !jobs_.empty(); });
      Job* job = jobs_.front();
      if (job->next.load() >= job->blocks) {  // taken: the launcher retires it
        jobs_.pop_front();
        continue;
      }
      ++users_[job];
      lock.unlock();
      work_on(*job);
      lock.lock();
      if (--users_[job] == 0) {
        users_.erase(job);
        idle_.notify_all();
      }
    }
  }

 public:
  // Waits until no pool thread is inside the job (its memory may then go).
  void wait_unused(Job* job) {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return users_.count(job) == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<Job*> jobs_;
  std::map<Job*, int> users_;
};

Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

std::atomic<uint64_t> launches{0};

std::string run_once(const KernelCall& call, const Schedule& schedule, uint64_t launch_id) {
  Job job;
  job.call = &call;
  job.schedule = &schedule;
  job.launch_id = launch_id;
  job.blocks = static_cast<uint64_t>(call.grid.x) * call.grid.y * call.grid.z;
  Pool& p = pool();
  p.post(&job);
  work_on(job);
  {
    std::unique_lock<std::mutex> lock(job.mu);
    job.done.wait(lock, [&] { return job.finished.load() == job.blocks; });
  }
  p.retire(&job);
  p.wait_unused(&job);
  return job.error;
}

}  // namespace

cudaError_t check_launch(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes) {
  using L = DeviceLimits;
  const uint64_t threads = static_cast<uint64_t>(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
      threads > static_cast<uint64_t>(L::kMaxThreadsPerBlock) || block.x > static_cast<unsigned>(L::kMaxBlockDim[0]) ||
      block.y > static_cast<unsigned>(L::kMaxBlockDim[1]) || block.z > static_cast<unsigned>(L::kMaxBlockDim[2]) ||
      grid.x > static_cast<unsigned>(L::kMaxGridDim[0]) || grid.y > static_cast<unsigned>(L::kMaxGridDim[1]) ||
      grid.z > static_cast<unsigned>(L::kMaxGridDim[2])) {
    return cudaErrorInvalidConfiguration;
  }
  if (dynamic_shared_bytes > max_dynamic_shared_memory(kernel)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t run_grid(const KernelCall& call, std::string& message) {
  const std::vector<Schedule> ss = schedules();
  const uint64_t id = launches.fetch_add(1);
  if (ss.size() == 1) {
    message = run_once(call, ss[0], id);
    return message.empty() ? cudaSuccess : cudaErrorLaunchFailure;
  }
  // One kernel at a time while comparing, and no copy meanwhile: neither a kernel nor a copy on
  // another stream may write what this one's snapshot holds (whole allocations: a copy into another
  // tensor of the same segment is no race, and a restore must not undo it).
  std::lock_guard<std::mutex> lock(schedule_comparison_mutex());
  const MemorySnapshot before = snapshot_device_memory(call.argument_bytes, call.argument_size);
  message = run_once(call, ss[0], id);
  if (!message.empty()) return cudaErrorLaunchFailure;
  const MemorySnapshot first = snapshot_device_memory(call.argument_bytes, call.argument_size);
  for (size_t i = 1; i < ss.size(); ++i) {
    restore_device_memory(before);
    message = run_once(call, ss[i], id);
    if (!message.empty()) return cudaErrorLaunchFailure;
    const std::string where = first_difference(first);
    if (!where.empty()) {
      message = std::string("kernel ") + call.name + ": its result depends on the order its threads run in (a race): " +
                "schedules " + ss[0].name() + " and " + ss[i].name() + " leave different bytes, first at " + where;
      return cudaErrorLaunchFailure;
    }
  }
  return cudaSuccess;
}

}  // namespace remat::cuda_emu
