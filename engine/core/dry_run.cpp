// Dry runs that own their counters (see dry_run.h).
#include "engine/core/dry_run.h"

#include "engine/core/device_caching_allocator.h"
#include "engine/core/error.h"

namespace remat {

void StorageObserverList::add(int id, StorageObserver observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observers_.emplace_back(id, std::move(observer));
  nonempty_.store(true);
}

bool StorageObserverList::remove(int id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = observers_.begin(); it != observers_.end(); ++it) {
    if (it->first == id) {
      observers_.erase(it);
      nonempty_.store(!observers_.empty());
      return true;
    }
  }
  return false;
}

void StorageObserverList::remove_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  observers_.clear();
  nonempty_.store(false);
}

void StorageObserverList::notify(const StorageEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, observer] : observers_) observer(event);
}

namespace {

std::atomic<uint64_t> g_next_id{1};

// Trivially constructed and destroyed: readable from any thread_local's destructor. nullptr: the
// process-wide state.
thread_local DryRunState* tls_current = nullptr;

struct Hooks {
  std::mutex mutex;
  std::vector<DryRunClosedHook> hooks;
};
Hooks& hooks() {
  static Hooks* h = new Hooks();  // never destroyed, like the allocator registry
  return *h;
}

namespace cca = cuda::CUDACachingAllocator;

// The device a dry run's imitation of the CUDA caching allocator runs over: segments are address
// ranges that nothing backs (data() of a Meta storage is null whatever its allocator returned),
// events are done as soon as they are recorded, and memory never runs out.
class NoMemoryBackend final : public cca::DeviceBackend {
 public:
  void* raw_alloc(size_t nbytes) override {
    void* p = reinterpret_cast<void*>(next_);
    next_ += (nbytes + cca::kRoundLarge - 1) / cca::kRoundLarge * cca::kRoundLarge;
    return p;
  }
  void raw_free(void*) override {}
  void* create_event() override { return this; }
  void destroy_event(void*) override {}
  void record_event(void*, cca::StreamHandle) override {}
  bool query_event(void*) override { return true; }
  void synchronize_event(void*) override {}

 private:
  uintptr_t next_ = uintptr_t{1} << 40;
};

}  // namespace

DryRunState::DryRunState(uint64_t id_, DeviceType imitated) : id(id_), accounting(imitated) {}
DryRunState::~DryRunState() = default;

cca::DeviceCachingAllocator& DryRunState::cuda_blocks() {
  std::lock_guard<std::mutex> lock(cuda_blocks_mutex_);
  if (!cuda_blocks_) cuda_blocks_ = std::make_unique<cca::DeviceCachingAllocator>(
                         Device{kMeta}, std::make_unique<NoMemoryBackend>(), &stats);
  return *cuda_blocks_;
}

void DryRunState::empty_cache() {
  cca::DeviceCachingAllocator* blocks = nullptr;
  {
    std::lock_guard<std::mutex> lock(cuda_blocks_mutex_);
    blocks = cuda_blocks_.get();
  }
  if (blocks != nullptr) blocks->empty_cache();
}

DryRunState& process_dry_run() {
  // One reference that is never dropped: storages made outside every DryRun may outlive statics.
  static DryRunState* s = [] {
    auto* state = new DryRunState(0, kCPU);
    intrusive_ptr<DryRunState>(state).release();
    return state;
  }();
  return *s;
}

DryRunState& current_dry_run() { return tls_current != nullptr ? *tls_current : process_dry_run(); }

DryRun::DryRun(DeviceType imitated) : previous_(tls_current) {
  REMAT_CHECK(imitated != kMeta, "DryRun: a dry run counts like cpu or cuda, not meta");
  state_ = make_intrusive<DryRunState>(g_next_id.fetch_add(1, std::memory_order_relaxed), imitated);
  tls_current = state_.get();
}

DryRun::~DryRun() {
  tls_current = previous_;
  state_->observers.remove_all();  // then the allocator's hook forgets which ids they were
  std::vector<DryRunClosedHook> to_call;
  {
    std::lock_guard<std::mutex> lock(hooks().mutex);
    to_call = hooks().hooks;
  }
  for (DryRunClosedHook hook : to_call) hook(state_->id);
}

void add_dry_run_closed_hook(DryRunClosedHook hook) {
  std::lock_guard<std::mutex> lock(hooks().mutex);
  hooks().hooks.push_back(hook);
}

namespace detail {

CurrentDryRunGuard::CurrentDryRunGuard(DryRunState* state) : previous_(tls_current), active_(state != nullptr) {
  if (active_) tls_current = state;
}
CurrentDryRunGuard::~CurrentDryRunGuard() {
  if (active_) tls_current = previous_;
}

intrusive_ptr<DryRunState> retain_current_dry_run() { return intrusive_ptr<DryRunState>(&current_dry_run()); }

}  // namespace detail

}  // namespace remat
