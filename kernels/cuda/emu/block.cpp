// One block of a kernel on the emulated device: see block.h.
#include "kernels/cuda/emu/block.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

namespace remat::cuda_emu {

namespace {

thread_local BlockState* tls_block = nullptr;
thread_local ThreadState* tls_thread = nullptr;
thread_local std::string* tls_thread_error = nullptr;

size_t stack_bytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("REMAT_CUDA_EMU_STACK");
    if (env != nullptr && *env != '\0') return static_cast<size_t>(std::strtoull(env, nullptr, 10));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return static_cast<size_t>(512 * 1024);  // sanitizers' frames are several times larger
#else
    return static_cast<size_t>(64 * 1024);
#endif
  }();
  return bytes;
}

// Per worker thread: the fibers' stacks and the block's state, reused from block to block.
struct Worker {
  FiberStacks stacks{stack_bytes()};
  std::vector<ThreadState> threads;
  std::vector<uint64_t> exchange;
  std::vector<char> dynamic_shared;
  std::vector<int> order;
};

Worker& worker() {
  static thread_local Worker w;
  return w;
}

void thread_entry(void* arg) {
  auto* t = static_cast<ThreadState*>(arg);
  try {
    tls_block->call->invoke(tls_block->call->closure);
  } catch (const std::exception& e) {
    if (tls_thread_error->empty()) *tls_thread_error = std::string("a thread threw: ") + e.what();
  } catch (...) {
    if (tls_thread_error->empty()) *tls_thread_error = "a thread threw";
  }
  t->wait = Wait::Done;
}

// Fills dynamic shared memory with a pattern that differs between schedules: on a GPU it holds
// whatever the last block left, so a kernel that reads it before writing it is wrong, and here
// its result then differs from schedule to schedule.
unsigned char poison_byte(const Schedule& s) {
  switch (s.kind) {
    case Schedule::Kind::Forward: return 0xFF;
    case Schedule::Kind::Reverse: return 0x7F;
    case Schedule::Kind::Random: return static_cast<unsigned char>(0x80 | (s.seed * 0x9E3779B97F4A7C15ull >> 57));
  }
  return 0xFF;
}

const char* wait_name(Wait w) {
  switch (w) {
    case Wait::Running: return "running";
    case Wait::Block: return "__syncthreads";
    case Wait::Warp: return "a warp collective";
    case Wait::Done: return "exited";
  }
  return "?";
}

// Releases every barrier whose threads have all arrived; false if none could be released.
bool release_barriers(BlockState& b) {
  bool released = false;
  ThreadState* ts = b.thread_states;
  const int n = b.threads;
  // Warp collectives: each lane the first waiter's mask names has arrived or exited.
  for (int w0 = 0; w0 < n; w0 += 32) {
    const int w1 = std::min(n, w0 + 32);
    unsigned mask = 0;
    for (int i = w0; i < w1; ++i)
      if (ts[i].wait == Wait::Warp) {
        mask = ts[i].warp_mask;
        break;
      }
    if (mask == 0) continue;
    bool all = true;
    for (int i = w0; i < w1 && all; ++i)
      if ((mask >> (i - w0) & 1u) != 0 && ts[i].wait != Wait::Warp && ts[i].wait != Wait::Done) all = false;
    if (!all) continue;
    for (int i = w0; i < w1; ++i)
      if ((mask >> (i - w0) & 1u) != 0 && ts[i].wait == Wait::Warp) ts[i].wait = Wait::Running;
    released = true;
  }
  if (released) return true;
  // __syncthreads: every thread that has not exited is there (exited threads count as arrived).
  bool any = false;
  for (int i = 0; i < n; ++i) {
    if (ts[i].wait == Wait::Done) continue;
    if (ts[i].wait != Wait::Block) return false;
    any = true;
  }
  if (!any) return false;
  for (int i = 0; i < n; ++i)
    if (ts[i].wait == Wait::Block) ts[i].wait = Wait::Running;
  return true;
}

std::string deadlock_message(const BlockState& b) {
  std::ostringstream os;
  os << "kernel " << b.call->name << ": deadlock in block (" << b.index.x << ", " << b.index.y << ", " << b.index.z
     << "): threads wait at barriers that the others never reach:";
  int shown = 0;
  for (int i = 0; i < b.threads && shown < 8; ++i) {
    const ThreadState& t = b.thread_states[i];
    if (t.wait == Wait::Done) continue;
    os << " thread " << i << " at " << wait_name(t.wait) << (shown == 7 ? ", ..." : ";");
    ++shown;
  }
  return os.str();
}

}  // namespace

BlockState& current_block() { return *tls_block; }
ThreadState& current_thread() { return *tls_thread; }

void block_barrier() {
  ThreadState& t = *tls_thread;
  t.wait = Wait::Block;
  t.fiber.yield();
}

void warp_barrier(unsigned mask) {
  ThreadState& t = *tls_thread;
  t.wait = Wait::Warp;
  t.warp_mask = mask;
  t.fiber.yield();
}

uint64_t* warp_slot(int lane) {
  ThreadState& t = *tls_thread;
  return tls_block->exchange + ((t.linear >> 5) * 2 + t.parity) * 32 + lane;
}

std::string run_block(const KernelCall& call, uint3 block_index, const Schedule& schedule, uint64_t launch_id) {
  Worker& w = worker();
  const int n = static_cast<int>(call.block.x * call.block.y * call.block.z);
  if (static_cast<int>(w.threads.size()) < n) w.threads.resize(n);
  const int warps = (n + 31) / 32;
  w.exchange.assign(static_cast<size_t>(warps) * 64, 0);
  if (call.dynamic_shared_bytes > 0) {
    w.dynamic_shared.resize(call.dynamic_shared_bytes);
    std::memset(w.dynamic_shared.data(), poison_byte(schedule), call.dynamic_shared_bytes);
  }
  BlockState b;
  b.call = &call;
  b.index = block_index;
  b.threads = n;
  b.thread_states = w.threads.data();
  b.exchange = w.exchange.data();
  b.dynamic_shared = call.dynamic_shared_bytes > 0 ? w.dynamic_shared.data() : nullptr;

  std::string error;
  BlockState* outer_block = tls_block;
  ThreadState* outer_thread = tls_thread;
  std::string* outer_error = tls_thread_error;
  tls_block = &b;
  tls_thread_error = &error;

  for (int i = 0; i < n; ++i) {
    ThreadState& t = w.threads[i];
    t.linear = i;
    t.index = uint3{static_cast<unsigned>(i) % call.block.x, (static_cast<unsigned>(i) / call.block.x) % call.block.y,
                    static_cast<unsigned>(i) / (call.block.x * call.block.y)};
    t.wait = Wait::Running;
    t.warp_mask = 0;
    t.parity = 0;
    size_t size = 0;
    char* stack = w.stacks.stack(static_cast<size_t>(i), &size);
    t.fiber.start(stack, size, &thread_entry, &t);
  }
  w.order.resize(n);
  std::iota(w.order.begin(), w.order.end(), 0);
  if (schedule.kind == Schedule::Kind::Reverse) std::reverse(w.order.begin(), w.order.end());
  const uint64_t linear_block =
      block_index.x + static_cast<uint64_t>(call.grid.x) * (block_index.y + static_cast<uint64_t>(call.grid.y) * block_index.z);
  std::mt19937_64 rng(schedule.seed ^ (launch_id * 0x9E3779B97F4A7C15ull) ^ (linear_block * 0xC2B2AE3D27D4EB4Full));
  if (schedule.kind == Schedule::Kind::Random) std::shuffle(w.order.begin(), w.order.end(), rng);

  int remaining = n;
  while (remaining > 0) {
    for (int i : w.order) {
      ThreadState& t = w.threads[i];
      if (t.wait != Wait::Running) continue;
      tls_thread = &t;
      t.fiber.resume();
      if (t.wait == Wait::Done) {
        t.fiber.destroy();
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (!release_barriers(b)) {
      error = deadlock_message(b);
      // The fibers stay suspended: their stacks are reset when the worker runs its next block.
      for (int i = 0; i < n; ++i)
        if (w.threads[i].wait != Wait::Done) w.threads[i].fiber.destroy();
      break;
    }
    if (schedule.kind == Schedule::Kind::Random) std::shuffle(w.order.begin(), w.order.end(), rng);
  }
  tls_block = outer_block;
  tls_thread = outer_thread;
  tls_thread_error = outer_error;
  if (!error.empty() && error.rfind("kernel ", 0) != 0) error = std::string("kernel ") + call.name + ": " + error;
  return error;
}

}  // namespace remat::cuda_emu
