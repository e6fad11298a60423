// Mirrors test/test_torch.py (sizes, strides, contiguity, version counter).
// Tests engine/core/tensor_impl.cpp (TensorImpl: sizes, strides, contiguity, storage, version).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

namespace {
intrusive_ptr<TensorImpl> make_impl(Shape sizes, Shape strides, int64_t offset = 0,
                                    ScalarType dtype = kFloat, Device device = Device{kCPU}) {
  auto storage = make_intrusive<StorageImpl>(64 * elementSize(dtype), device);
  return make_intrusive<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), offset);
}
}  // namespace

TEST_CASE("TensorImpl records sizes, strides, numel, nbytes and dtype", "[tensor_impl]") {
  auto impl = make_impl({2, 3, 4}, {12, 4, 1}, 0, kDouble);
  REQUIRE(impl->sizes() == Shape{2, 3, 4});
  REQUIRE(impl->strides() == Shape{12, 4, 1});
  REQUIRE(impl->dim() == 3);
  REQUIRE(impl->numel() == 24);
  REQUIRE(impl->itemsize() == 8);
  REQUIRE(impl->nbytes() == 24 * 8);
  REQUIRE(impl->dtype() == kDouble);
  REQUIRE(impl->device() == Device{kCPU});
  REQUIRE(impl->storage_offset() == 0);
  REQUIRE(impl->is_contiguous());
  REQUIRE_FALSE(impl->is_view());
}

TEST_CASE("TensorImpl contiguity is row-major, ignoring the strides of size-1 dims", "[tensor_impl]") {
  REQUIRE(make_impl({2, 3}, {3, 1})->is_contiguous());
  REQUIRE_FALSE(make_impl({2, 3}, {1, 2})->is_contiguous());  // a transpose
  REQUIRE_FALSE(make_impl({2, 3}, {6, 2})->is_contiguous());  // a strided slice
  REQUIRE(make_impl({2, 1, 3}, {3, 99, 1})->is_contiguous());  // size-1 dim: any stride
  REQUIRE(make_impl({}, {})->is_contiguous());                 // a scalar
  REQUIRE(make_impl({}, {})->numel() == 1);
  REQUIRE(make_impl({0, 3}, {3, 1})->numel() == 0);
}

TEST_CASE("TensorImpl::set_sizes_and_strides recomputes numel and contiguity", "[tensor_impl]") {
  auto impl = make_impl({2, 3}, {3, 1});
  impl->set_sizes_and_strides({3, 2}, {1, 3});
  REQUIRE(impl->numel() == 6);
  REQUIRE_FALSE(impl->is_contiguous());
  impl->set_sizes_and_strides({6}, {1});
  REQUIRE(impl->is_contiguous());
  REQUIRE(impl->dim() == 1);
}

TEST_CASE("contiguous_strides and shape_numel follow PyTorch (zero-size dims count as 1)", "[tensor_impl]") {
  REQUIRE(contiguous_strides({2, 3, 4}) == Shape{12, 4, 1});
  REQUIRE(contiguous_strides({}) == Shape{});
  // torch.empty(2, 0, 3).stride() == (3, 3, 1)
  REQUIRE(contiguous_strides({2, 0, 3}) == Shape{3, 3, 1});
  REQUIRE(shape_numel({2, 3, 4}) == 24);
  REQUIRE(shape_numel({2, 0, 3}) == 0);
  REQUIRE(shape_numel({}) == 1);
}

TEST_CASE("TensorImpl::data applies the storage offset in elements", "[tensor_impl]") {
  auto impl = make_impl({2}, {1}, 5, kDouble);
  char* base = static_cast<char*>(impl->storage()->data());
  REQUIRE(static_cast<char*>(impl->data()) == base + 5 * 8);
  // Meta tensors have no memory: data() is null whatever the offset.
  auto meta = make_impl({2}, {1}, 5, kDouble, Device{kMeta});
  REQUIRE(meta->data() == nullptr);
}

TEST_CASE("TensorImpl key set: the backend key, plus Autograd when asked", "[tensor_impl]") {
  auto cpu = make_impl({2}, {1});
  REQUIRE(cpu->key_set() == DispatchKeySet(DispatchKey::CPU));
  cpu->set_autograd_key(true);
  REQUIRE(cpu->key_set() == DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd));
  cpu->set_autograd_key(false);
  REQUIRE(cpu->key_set() == DispatchKeySet(DispatchKey::CPU));
  REQUIRE(make_impl({2}, {1}, 0, kFloat, Device{kMeta})->key_set() == DispatchKeySet(DispatchKey::Meta));
}

TEST_CASE("TensorImpl version lives on the storage: impls sharing it share the counter", "[tensor_impl]") {
  auto storage = make_intrusive<StorageImpl>(32, Device{kCPU});
  auto a = make_intrusive<TensorImpl>(storage, kFloat, Shape{8}, Shape{1}, 0);
  auto b = make_intrusive<TensorImpl>(storage, kFloat, Shape{4}, Shape{2}, 1);
  REQUIRE(a->version() == 0);
  b->bump_version();
  REQUIRE(a->version() == 1);
  REQUIRE(b->version() == 1);
  a->bump_version();
  REQUIRE(b->version() == 2);
  REQUIRE(storage->use_count() == 3);  // ours + two impls
}

TEST_CASE("TensorImpl owns its autograd meta", "[tensor_impl]") {
  struct Meta : AutogradMetaInterface {
    explicit Meta(int* destroyed) : destroyed_(destroyed) {}
    ~Meta() override { ++*destroyed_; }
    int* destroyed_;
  };
  int destroyed = 0;
  {
    auto impl = make_impl({1}, {1});
    REQUIRE(impl->autograd_meta() == nullptr);
    impl->set_autograd_meta(std::make_unique<Meta>(&destroyed));
    REQUIRE(impl->autograd_meta() != nullptr);
    impl->set_autograd_meta(std::make_unique<Meta>(&destroyed));  // replaces (and frees) the first
    REQUIRE(destroyed == 1);
  }
  REQUIRE(destroyed == 2);
}
