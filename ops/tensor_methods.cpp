// Mirrors the generated ATen/core/TensorBody.h methods and TensorMethods.cpp: Tensor's op
// methods and operators, each a call of the functional API.
#include <cmath>
#include <cstring>
#include <iomanip>

#include "ops/cpu_utils.h"
#include "ops/functions.h"

namespace remat {

std::vector<double> Tensor::to_vector() const {
  REMAT_CHECK(defined(), "to_vector: called on an undefined Tensor");
  REMAT_CHECK(!is_meta(), "to_vector: a meta tensor (shape ", sizes(), ") has no values");
  // A raw host copy: reading values is not an op call (modes and autograd do not see it).
  Tensor host = *this;
  if (!device().is_cpu()) {
    Tensor staged = make_empty(sizes(), dtype(), Device{kCPU});
    Tensor src = is_contiguous() ? *this : contiguous();
    get_allocator(device())->copy_to_host(staged.data_ptr(), src.data_ptr(), static_cast<size_t>(src.nbytes()));
    host = staged;
  }
  Tensor d = make_empty(sizes(), kDouble, Device{kCPU});
  ops::copy_into_cpu(d, host);
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + numel());
}

double Tensor::item() const {
  REMAT_CHECK(defined() && numel() == 1, "a Tensor with ", defined() ? numel() : 0,
              " elements cannot be converted to Scalar");
  REMAT_CHECK(!is_meta(), "item: a meta tensor (shape ", sizes(), ") has no value (a dry run on the Meta device "
              "computes no values)");
  return to_vector()[0];
}

Tensor Tensor::to(Device d) const { return d == device() ? *this : _to_copy(*this, std::nullopt, d); }
Tensor Tensor::to(ScalarType t) const { return t == dtype() ? *this : _to_copy(*this, t, std::nullopt); }
Tensor Tensor::clone() const { return remat::clone(*this); }
Tensor Tensor::detach() const { return remat::detach(*this); }
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : remat::contiguous(*this); }

Tensor& Tensor::add_(const Tensor& other) { return remat::add_(*this, other); }
Tensor& Tensor::add_(double other) { return remat::add_(*this, other); }
Tensor& Tensor::mul_(const Tensor& other) { return remat::mul_(*this, other); }
Tensor& Tensor::mul_(double other) { return remat::mul_(*this, other); }
Tensor& Tensor::zero_() { return remat::zero_(*this); }
Tensor& Tensor::fill_(double value) { return remat::fill_(*this, value); }
Tensor& Tensor::copy_(const Tensor& src) { return remat::copy_(*this, src); }
Tensor& Tensor::relu_() { return remat::relu_(*this); }

Tensor Tensor::neg() const { return remat::neg(*this); }
Tensor Tensor::exp() const { return remat::exp(*this); }
Tensor Tensor::log() const { return remat::log(*this); }
Tensor Tensor::sin() const { return remat::sin(*this); }
Tensor Tensor::cos() const { return remat::cos(*this); }
Tensor Tensor::tanh() const { return remat::tanh(*this); }
Tensor Tensor::sigmoid() const { return remat::sigmoid(*this); }
Tensor Tensor::relu() const { return remat::relu(*this); }
Tensor Tensor::silu() const { return remat::silu(*this); }
Tensor Tensor::sqrt() const { return remat::sqrt(*this); }
Tensor Tensor::rsqrt() const { return remat::rsqrt(*this); }
Tensor Tensor::abs() const { return remat::abs(*this); }
Tensor Tensor::pow(double e) const { return remat::pow(*this, e); }
Tensor Tensor::sum() const { return remat::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return remat::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return remat::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return remat::mean(*this, dims, keepdim); }
Tensor Tensor::amax(int64_t dim, bool keepdim) const { return remat::amax(*this, dim, keepdim); }
Tensor Tensor::softmax(int64_t dim) const { return remat::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return remat::log_softmax(*this, dim); }
Tensor Tensor::mm(const Tensor& other) const { return remat::mm(*this, other); }
Tensor Tensor::matmul(const Tensor& other) const { return remat::matmul(*this, other); }
Tensor Tensor::view(const Shape& shape) const { return remat::view(*this, shape); }
Tensor Tensor::reshape(const Shape& shape) const { return remat::reshape(*this, shape); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return remat::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return remat::t(*this); }
Tensor Tensor::permute(const Shape& dims) const { return remat::permute(*this, dims); }
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return remat::slice(*this, dim, start, end, step);
}
Tensor Tensor::unsqueeze(int64_t dim) const { return remat::unsqueeze(*this, dim); }
Tensor Tensor::squeeze(int64_t dim) const { return remat::squeeze(*this, dim); }
Tensor Tensor::expand(const Shape& shape) const { return remat::expand(*this, shape); }
Tensor Tensor::as_strided(const Shape& size, const Shape& stride, std::optional<int64_t> storage_offset) const {
  return remat::as_strided(*this, size, stride, storage_offset);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return remat::select(*this, dim, index); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return remat::narrow(*this, dim, start, length);
}
Tensor Tensor::view_as(const Tensor& other) const { return remat::view_as(*this, other); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return remat::unbind(*this, dim); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return remat::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return remat::chunk(*this, chunks, dim); }
Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return remat::masked_fill(*this, mask, value); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b) { return mul(pow(b, -1.0), a); }
Tensor operator-(const Tensor& a) { return neg(a); }

bool equal(const Tensor& a, const Tensor& b) {
  REMAT_CHECK(!a.is_meta() && !b.is_meta(), "equal: a meta tensor (shape ", a.is_meta() ? a.sizes() : b.sizes(),
              ") has no values to compare");
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  // Bitwise: every remat dtype converts to double exactly and injectively, so comparing the
  // doubles' bits compares the values' bits (-0.0 differs from 0.0; NaN equals the same NaN).
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  return x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  REMAT_CHECK(!a.is_meta() && !b.is_meta(), "allclose: a meta tensor (shape ",
              a.is_meta() ? a.sizes() : b.sizes(), ") has no values to compare");
  if (a.sizes() != b.sizes()) return false;
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return false;
    if (std::abs(x[i] - y[i]) > atol + rtol * std::abs(y[i])) return false;
  }
  return true;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  os << "tensor(";
  if (!t.is_meta() && t.numel() <= 64) {
    std::vector<double> v = t.to_vector();
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << std::setprecision(6) << v[i];
    os << "], ";
  }
  os << "size=" << t.sizes() << ", dtype=" << toString(t.dtype());
  if (!t.device().is_cpu()) os << ", device=" << t.device();
  if (t.requires_grad()) os << ", requires_grad=True";
  return os << ")";
}

}  // namespace remat
