// Mirrors aten/src/ATen/native/mkldnn/Matmul.cpp (oneDNN matmul).
#include "kernels/cpu/onednn_matmul.h"

#ifdef REMAT_USE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#endif

#include "engine/core/error.h"
#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu::onednn {

namespace {
// The caller's contract, checked with or without oneDNN.
void check_problem(const StridedGemm& p, float alpha, float beta, const void* bias) {
  REMAT_CHECK(p.batch_dims >= 0 && p.batch_dims <= StridedGemm::kMaxBatchDims, "oneDNN matmul: ", p.batch_dims,
              " batch dims (at most ", StridedGemm::kMaxBatchDims, ")");
  REMAT_CHECK(bias == nullptr || (alpha == 1.0f && beta == 0.0f), "oneDNN matmul: a bias needs alpha = 1 and beta = 0, got ",
              alpha, " and ", beta);
}
}  // namespace

#ifdef REMAT_USE_ONEDNN

namespace {

// Everything the primitive depends on. Pointers are not part of it: one primitive serves every
// call with the same problem.
struct Key {
  DataType type;
  bool bias;
  // Called inside an OpenMP parallel region (a blocked kernel's per-thread products), where
  // oneDNN runs on one thread: a primitive made for the whole pool must not be reused there.
  bool nested;
  float alpha, beta;
  StridedGemm p;

  bool operator==(const Key& o) const {
    return type == o.type && bias == o.bias && nested == o.nested && alpha == o.alpha && beta == o.beta &&
           p.m == o.p.m && p.n == o.p.n && p.k == o.p.k && p.batch_dims == o.p.batch_dims && p.batch == o.p.batch && p.a == o.p.a &&
           p.b == o.p.b && p.c == o.p.c;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    uint32_t alpha_bits, beta_bits;
    std::memcpy(&alpha_bits, &k.alpha, sizeof alpha_bits);
    std::memcpy(&beta_bits, &k.beta, sizeof beta_bits);
    mix(static_cast<uint64_t>(k.type) | (k.bias ? 2u : 0u) << 4 | (k.nested ? 4u : 0u) << 4);
    mix(alpha_bits);
    mix(beta_bits);
    mix(static_cast<uint64_t>(k.p.m));
    mix(static_cast<uint64_t>(k.p.n));
    mix(static_cast<uint64_t>(k.p.k));
    mix(static_cast<uint64_t>(k.p.batch_dims));
    for (int d = 0; d < k.p.batch_dims; ++d) mix(static_cast<uint64_t>(k.p.batch[static_cast<size_t>(d)]));
    for (int d = 0; d < k.p.batch_dims + 2; ++d) {
      mix(static_cast<uint64_t>(k.p.a[static_cast<size_t>(d)]));
      mix(static_cast<uint64_t>(k.p.b[static_cast<size_t>(d)]));
      mix(static_cast<uint64_t>(k.p.c[static_cast<size_t>(d)]));
    }
    return static_cast<size_t>(h);
  }
};

// A cached primitive, or the record that oneDNN has only its reference implementation here
// (which is slower than the fallback: the caller should not use it).
struct Entry {
  bool usable = false;
  std::string impl;
  dnnl::memory::desc a, b, c, bias;
  std::unique_ptr<dnnl::matmul> primitive;
  dnnl::memory::desc scratchpad;  // what it asks of thread_scratchpad at each execute (may be empty)
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::data_type to_dnnl(DataType t) {
  return t == DataType::Float ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
}

// The operand's descriptor: dims [batch..., rows, cols] with its strides.
dnnl::memory::desc operand_desc(const StridedGemm& p, DataType t, int64_t rows, int64_t cols,
                                const std::array<int64_t, StridedGemm::kMaxBatchDims + 2>& strides) {
  dnnl::memory::dims dims, st;
  for (int d = 0; d < p.batch_dims; ++d) {
    dims.push_back(p.batch[static_cast<size_t>(d)]);
    st.push_back(strides[static_cast<size_t>(d)]);
  }
  dims.push_back(rows);
  dims.push_back(cols);
  st.push_back(strides[static_cast<size_t>(p.batch_dims)]);
  st.push_back(strides[static_cast<size_t>(p.batch_dims + 1)]);
  return dnnl::memory::desc(dims, to_dnnl(t), st);
}

Entry make_entry(const Key& key) {
  const StridedGemm& p = key.p;
  Entry e;
  e.a = operand_desc(p, key.type, p.m, p.k, p.a);
  e.b = operand_desc(p, key.type, p.k, p.n, p.b);
  e.c = operand_desc(p, key.type, p.m, p.n, p.c);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // thread_scratchpad
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(key.beta);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd;
    if (key.bias) {
      // [1, ..., 1, n]: one row, broadcast over the batch and the rows.
      dnnl::memory::dims dims(static_cast<size_t>(p.batch_dims + 2), 1), st(static_cast<size_t>(p.batch_dims + 2), p.n);
      dims.back() = p.n;
      st.back() = 1;
      e.bias = dnnl::memory::desc(dims, to_dnnl(key.type), st);
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a, e.b, e.bias, e.c), attr, cpu_engine());
    } else {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a, e.b, e.c), attr, cpu_engine());
    }
    e.impl = pd.impl_info_str();
    e.usable = e.impl.rfind("ref", 0) != 0;
    if (e.usable) {
      e.primitive = std::make_unique<dnnl::matmul>(pd);
      e.scratchpad = pd.scratchpad_desc();
    }
  } catch (const dnnl::error&) {
    e.usable = false;  // no implementation at all (e.g. bf16 on a CPU without AVX-512)
    e.impl.clear();
  }
  return e;
}

// oneDNN's scratchpad (where a product packs its operand blocks): one buffer per thread, at a 2 MiB
// boundary, kept for the next product and grown to the largest asked for (scratchpad_mode::user,
// as PyTorch's ideep asks oneDNN; a thread runs one product at a time). In oneDNN's own mode, 2.6
// allocates it at every execute and frees it after, and the GPT's weight gradient h^T g (1024 x 256 x
// 1024 f32, a transposed, 2 threads, AMD EPYC family 25 model 17) ran at 3.24 ms in spells of the
// machine where it otherwise ran at 2.57-2.80, while with this buffer at 2.42-2.68 throughout
// (bench/ops, 6 processes of each in alternation). Null if it cannot be had.
void* thread_scratchpad(size_t bytes) {
  constexpr size_t kBoundary = size_t{2} << 20;
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (bytes > buffer.size) {
    std::free(buffer.data);
    buffer.size = (bytes + kBoundary - 1) / kBoundary * kBoundary;
    buffer.data = std::aligned_alloc(kBoundary, buffer.size);
    if (buffer.data == nullptr) buffer.size = 0;
  }
  return buffer.data;
}

// Per thread: no lock on the hot path, and a primitive is never executed by two threads at once.
Entry& lookup(const Key& key) {
  thread_local std::unordered_map<Key, Entry, KeyHash> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_entry(key)).first;
  return it->second;
}

Key make_key(DataType type, const StridedGemm& p, float alpha, float beta, bool bias) {
  Key key{type, bias, in_parallel_region(), alpha, beta, StridedGemm{}};
  // Copy only the used entries, so that the unused ones never make two equal problems differ.
  key.p.m = p.m;
  key.p.n = p.n;
  key.p.k = p.k;
  key.p.batch_dims = p.batch_dims;
  for (int d = 0; d < p.batch_dims; ++d) key.p.batch[static_cast<size_t>(d)] = p.batch[static_cast<size_t>(d)];
  for (int d = 0; d < p.batch_dims + 2; ++d) {
    key.p.a[static_cast<size_t>(d)] = p.a[static_cast<size_t>(d)];
    key.p.b[static_cast<size_t>(d)] = p.b[static_cast<size_t>(d)];
    key.p.c[static_cast<size_t>(d)] = p.c[static_cast<size_t>(d)];
  }
  return key;
}

}  // namespace

bool built() { return true; }

namespace {
// Whether oneDNN runs code of `isa` (or a superset) here. The ISA values are feature masks
// (avx2_vnni is numerically above avx512_core): test the bits.
bool effective_isa_has(dnnl::cpu_isa isa) {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa()), want = static_cast<unsigned>(isa);
  return (have & want) == want;
}
}  // namespace

bool has_avx512() {
  static const bool yes = effective_isa_has(dnnl::cpu_isa::avx512_core);
  return yes;
}

bool has_amx() {
  static const bool yes = effective_isa_has(dnnl::cpu_isa::avx512_core_amx);
  return yes;
}

bool matmul(DataType type, const StridedGemm& p, float alpha, const void* a, const void* b, float beta, void* c,
            const void* bias) {
  check_problem(p, alpha, beta, bias);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return false;  // nothing to multiply: the caller's loop handles it
  Entry& e = lookup(make_key(type, p, alpha, beta, bias != nullptr));
  if (!e.usable) return false;
  const size_t scratchpad_bytes = e.scratchpad.get_size();
  void* scratchpad = scratchpad_bytes > 0 ? thread_scratchpad(scratchpad_bytes) : nullptr;
  if (scratchpad_bytes > 0 && scratchpad == nullptr) return false;  // the caller's fallback runs it
  dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  // oneDNN's memory objects take non-const handles; it only reads a, b and bias.
  dnnl::memory ma(e.a, engine, const_cast<void*>(a)), mb(e.b, engine, const_cast<void*>(b)), mc(e.c, engine, c);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, engine, const_cast<void*>(bias)));
  if (scratchpad != nullptr) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e.scratchpad, engine, scratchpad));
  e.primitive->execute(stream, args);
  stream.wait();
  return true;
}

const char* implementation(DataType type, const StridedGemm& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "";
  Entry& e = lookup(make_key(type, p, 1.0f, 0.0f, false));
  return e.impl.c_str();
}

#else  // built without oneDNN

bool built() { return false; }

bool has_avx512() { return false; }

bool has_amx() { return false; }

bool matmul(DataType, const StridedGemm& p, float alpha, const void*, const void*, float beta, void*, const void* bias) {
  check_problem(p, alpha, beta, bias);
  return false;
}

const char* implementation(DataType, const StridedGemm&) { return ""; }

#endif

}  // namespace remat::kernels::cpu::onednn
