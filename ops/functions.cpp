// Mirrors the generated ATen/Operators.cpp: each function looks its op up once and calls it
// through the typed fast path (see TypedOperatorHandle in engine/dispatch/dispatcher.h).
#include "ops/functions.h"

#include "engine/dispatch/dispatcher.h"
#include "ops/attention_defs.h"
#include "ops/complex_defs.h"
#include "ops/copy_defs.h"
#include "ops/dropout_defs.h"
#include "ops/embedding_defs.h"
#include "ops/factory_defs.h"
#include "ops/fused_optimizer_defs.h"
#include "ops/linalg_defs.h"
#include "ops/loss_defs.h"
#include "ops/normalization_defs.h"
#include "ops/pointwise_defs.h"
#include "ops/reduction_defs.h"
#include "ops/softmax_defs.h"
#include "ops/view_defs.h"

namespace remat {

namespace {
using T = const Tensor&;
template <class Sig>
TypedOperatorHandle<Sig> lookup(const char* name) {
  return find_op(name).typed<Sig>();
}
}  // namespace

// REMAT_OP(Sig, "aten::x"): a function-local handle, looked up on first use.
#define REMAT_OP(SIG, NAME) static const auto op = lookup<SIG>(NAME)

// An op by its Def (ops/pointwise_defs.h, softmax_defs.h, linalg_defs.h, reduction_defs.h,
// normalization_defs.h, dropout_defs.h, embedding_defs.h, loss_defs.h, fused_optimizer_defs.h,
// attention_defs.h, copy_defs.h, view_defs.h, factory_defs.h): one handle per Def, looked up on
// first use.
template <class Def, class... A>
auto call_def(const A&... args) {
  static const auto op = lookup<typename Def::Sig>(Def::name);
  return op.call(args...);
}
// Its in-place variant (the same C++ signature); the caller's handle back.
template <class Def, class... A>
Tensor& call_inplace(Tensor& self, const A&... rest) {
  static const auto op = lookup<typename Def::Sig>(Def::inplace_name);
  op.call(self, rest...);
  return self;
}

using Binary = Tensor(T, T);

// The elementwise ops of ops/pointwise.def: each call's name and C++ signature are its row's Def.
#define REMAT_UNARY(NAME, ...) \
  Tensor NAME(T a) { return call_def<ops::structured_##NAME>(a); }
#define REMAT_BINARY(NAME, ...) \
  Tensor NAME(T a, T b) { return call_def<ops::structured_##NAME>(a, b); }
#define REMAT_SCALAR(NAME, ...) \
  Tensor NAME(T a, double b) { return call_def<ops::structured_##NAME##_Scalar>(a, b); }
#define REMAT_POINTWISE(NAME, ...)
#define REMAT_POINTWISE_INPLACE(NAME, ...)
#include "ops/pointwise.def"
Tensor pow(T a, double e) { return call_def<ops::structured_pow>(a, e); }
Tensor eq(T a, T b) { return call_def<ops::structured_eq>(a, b); }
Tensor where(T c, T a, T b) { return call_def<ops::structured_where>(c, a, b); }
Tensor masked_fill(T a, T mask, double v) { return call_def<ops::structured_masked_fill>(a, mask, v); }
Tensor maximum(T a, T b) { return call_def<ops::structured_maximum>(a, b); }
Tensor minimum(T a, T b) { return call_def<ops::structured_minimum>(a, b); }
Tensor triu(T a, int64_t k) { return call_def<ops::structured_triu>(a, k); }

Tensor detach(T a) { return call_def<ops::structured_detach>(a); }

Tensor gelu(T a, const std::string& approximate) { return call_def<ops::structured_gelu>(a, approximate); }
Tensor threshold_backward(T g, T self, double threshold) {
  return call_def<ops::structured_threshold_backward>(g, self, threshold);
}
Tensor sigmoid_backward(T g, T out) { return call_def<ops::structured_sigmoid_backward>(g, out); }
Tensor tanh_backward(T g, T out) { return call_def<ops::structured_tanh_backward>(g, out); }
Tensor silu_backward(T g, T self) { return call_def<ops::structured_silu_backward>(g, self); }
Tensor gelu_backward(T g, T self, const std::string& approximate) {
  return call_def<ops::structured_gelu_backward>(g, self, approximate);
}

Tensor mm(T a, T b) { return call_def<ops::structured_mm>(a, b); }
Tensor bmm(T a, T b) { return call_def<ops::structured_bmm>(a, b); }
Tensor matmul(T a, T b) { REMAT_OP(Binary, "aten::matmul"); return op.call(a, b); }
Tensor addmm(T bias, T a, T b) { return call_def<ops::structured_addmm>(bias, a, b); }
Tensor linear(T x, T w, T b) { REMAT_OP(Tensor(T, T, T), "aten::linear"); return op.call(x, w, b); }

Tensor sum(T a) { return call_def<ops::structured_sum>(a, std::optional<Shape>(), false); }
Tensor sum(T a, const Shape& dims, bool keepdim) { return call_def<ops::structured_sum>(a, std::optional<Shape>(dims), keepdim); }
Tensor mean(T a) { return call_def<ops::structured_mean>(a, std::optional<Shape>(), false); }
Tensor mean(T a, const Shape& dims, bool keepdim) { return call_def<ops::structured_mean>(a, std::optional<Shape>(dims), keepdim); }
Tensor amax(T a, int64_t dim, bool keepdim) { return call_def<ops::structured_amax>(a, dim, keepdim); }
Tensor sum_to_size(T a, const Shape& size) { REMAT_OP(Tensor(T, const Shape&), "aten::sum_to_size"); return op.call(a, size); }

Tensor softmax(T a, int64_t dim) { return call_def<ops::structured_softmax>(a, dim); }
Tensor log_softmax(T a, int64_t dim) { return call_def<ops::structured_log_softmax>(a, dim); }
Tensor _softmax_backward_data(T g, T out, int64_t dim) {
  return call_def<ops::structured__softmax_backward_data>(g, out, dim);
}
Tensor _log_softmax_backward_data(T g, T out, int64_t dim) {
  return call_def<ops::structured__log_softmax_backward_data>(g, out, dim);
}
Tensor _masked_softmax(T a, T mask, std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  return call_def<ops::structured__masked_softmax>(a, mask, dim, mask_type);
}
Tensor _masked_softmax_backward(T g, T out, T mask, std::optional<int64_t> dim) {
  return call_def<ops::structured__masked_softmax_backward>(g, out, mask, dim);
}
Tensor layer_norm(T x, const Shape& shape, T w, T b, double eps) {
  REMAT_OP(Tensor(T, const Shape&, T, T, double), "aten::layer_norm");
  return op.call(x, shape, w, b, eps);
}
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(T x, const Shape& shape, T w, T b, double eps) {
  return call_def<ops::structured_native_layer_norm>(x, shape, w, b, eps);
}
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(T g, T x, const Shape& shape, T mean, T rstd, T w, T b) {
  return call_def<ops::structured_native_layer_norm_backward>(g, x, shape, mean, rstd, w, b);
}
Tensor rms_norm(T x, const Shape& shape, T w, double eps) {
  REMAT_OP(Tensor(T, const Shape&, T, double), "aten::rms_norm");
  return op.call(x, shape, w, eps);
}
std::tuple<Tensor, Tensor> _fused_rms_norm(T x, const Shape& shape, T w, double eps) {
  return call_def<ops::structured__fused_rms_norm>(x, shape, w, eps);
}
std::tuple<Tensor, Tensor> _fused_rms_norm_backward(T g, T x, const Shape& shape, T rstd, T w) {
  return call_def<ops::structured__fused_rms_norm_backward>(g, x, shape, rstd, w);
}
Tensor dropout(T x, double p, bool train, Generator* g) {
  REMAT_OP(Tensor(T, double, bool, Generator*), "aten::dropout");
  return op.call(x, p, train, g);
}
std::tuple<Tensor, Tensor> native_dropout(T x, double p, Generator* g) {
  return call_def<ops::structured_native_dropout>(x, p, g);
}
Tensor native_dropout_backward(T g, T mask, double scale) {
  return call_def<ops::structured_native_dropout_backward>(g, mask, scale);
}
Tensor embedding(T w, T idx) { return call_def<ops::structured_embedding>(w, idx); }
Tensor embedding_dense_backward(T g, T idx, int64_t n) {
  return call_def<ops::structured_embedding_dense_backward>(g, idx, n);
}
Tensor cross_entropy(T logits, T targets) { return call_def<ops::structured_cross_entropy>(logits, targets); }
Tensor cross_entropy_backward(T g, T logits, T targets) {
  return call_def<ops::structured_cross_entropy_backward>(g, logits, targets);
}
Tensor scaled_dot_product_attention(T q, T k, T v, bool is_causal, double dropout_p, Generator* g) {
  REMAT_OP(Tensor(T, T, T, bool, double, Generator*), "aten::scaled_dot_product_attention");
  return op.call(q, k, v, is_causal, dropout_p, g);
}
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(T q, T k, T v, double dropout_p, bool is_causal,
                                                                       T attn_mask, std::optional<double> scale) {
  return call_def<ops::structured__scaled_dot_product_flash_attention_for_cpu>(q, k, v, dropout_p, is_causal,
                                                                               attn_mask, scale);
}
std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    T g, T q, T k, T v, T out, T lse, double dropout_p, bool is_causal, T attn_mask, std::optional<double> scale) {
  return call_def<ops::structured__scaled_dot_product_flash_attention_for_cpu_backward>(
      g, q, k, v, out, lse, dropout_p, is_causal, attn_mask, scale);
}
std::tuple<Tensor, Tensor, Tensor, Tensor> _scaled_dot_product_efficient_attention(T q, T k, T v, T attn_bias,
                                                                                   bool compute_log_sumexp,
                                                                                   double dropout_p, bool is_causal,
                                                                                   std::optional<double> scale) {
  return call_def<ops::structured__scaled_dot_product_efficient_attention>(q, k, v, attn_bias, compute_log_sumexp,
                                                                           dropout_p, is_causal, scale);
}
std::tuple<Tensor, Tensor, Tensor, Tensor> _scaled_dot_product_efficient_attention_backward(
    T g, T q, T k, T v, T attn_bias, T out, T lse, T seed, T offset, double dropout_p, bool is_causal,
    std::optional<double> scale) {
  return call_def<ops::structured__scaled_dot_product_efficient_attention_backward>(
      g, q, k, v, attn_bias, out, lse, seed, offset, dropout_p, is_causal, scale);
}

Tensor view(T a, const Shape& s) { return call_def<ops::structured_view>(a, s); }
Tensor reshape(T a, const Shape& s) { return call_def<ops::structured_reshape>(a, s); }
Tensor transpose(T a, int64_t d0, int64_t d1) { return call_def<ops::structured_transpose>(a, d0, d1); }
Tensor t(T a) { return call_def<ops::structured_t>(a); }
Tensor permute(T a, const Shape& dims) { return call_def<ops::structured_permute>(a, dims); }
Tensor slice(T a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return call_def<ops::structured_slice>(a, dim, start, end, step);
}
Tensor slice_backward(T g, const Shape& sizes, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return call_def<ops::structured_slice_backward>(g, sizes, dim, start, end, step);
}
std::vector<Tensor> unbind(T a, int64_t dim) { return call_def<ops::structured_unbind_int>(a, dim); }
Tensor unsqueeze(T a, int64_t dim) { return call_def<ops::structured_unsqueeze>(a, dim); }
Tensor squeeze(T a, int64_t dim) { return call_def<ops::structured_squeeze>(a, dim); }
Tensor expand(T a, const Shape& s) { return call_def<ops::structured_expand>(a, s); }
Tensor as_strided(T a, const Shape& size, const Shape& stride, std::optional<int64_t> offset) {
  return call_def<ops::structured_as_strided>(a, size, stride, offset);
}
Tensor select(T a, int64_t dim, int64_t index) { return call_def<ops::structured_select>(a, dim, index); }
Tensor narrow(T a, int64_t dim, int64_t start, int64_t length) {
  return call_def<ops::structured_narrow>(a, dim, start, length);
}
Tensor view_as(T a, T other) { return call_def<ops::structured_view_as>(a, other); }
using Tensors = std::vector<Tensor>;
Tensors split_with_sizes(T a, const Shape& sizes, int64_t dim) {
  return call_def<ops::structured_split_with_sizes>(a, sizes, dim);
}
Tensors split(T a, int64_t size, int64_t dim) { return call_def<ops::structured_split>(a, size, dim); }
Tensor _unsafe_view(T a, const Shape& s) { return call_def<ops::structured__unsafe_view>(a, s); }
Tensor view_as_real(T a) { return call_def<ops::structured_view_as_real>(a); }
Tensor view_as_complex(T a) { return call_def<ops::structured_view_as_complex>(a); }
Tensor conj_physical(T a) { return call_def<ops::structured_conj_physical>(a); }
Tensors chunk(T a, int64_t chunks, int64_t dim) { return call_def<ops::structured_chunk>(a, chunks, dim); }

Tensor clone(T a) { return call_def<ops::structured_clone>(a); }
Tensor contiguous(T a) { return call_def<ops::structured_contiguous>(a); }
Tensor zeros_like(T a) { return call_def<ops::structured_zeros_like>(a); }
Tensor ones_like(T a) { return call_def<ops::structured_ones_like>(a); }
Tensor _to_copy(T a, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return call_def<ops::structured__to_copy>(a, dtype, device);
}
Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  // With no tensor there is no backend to dispatch to: say what is wrong instead.
  REMAT_CHECK(!ts.empty(), ops::structured_cat::name, ": expected a non-empty list of Tensors");
  return call_def<ops::structured_cat>(ts, dim);
}

// In-place: the op returns its self argument; the functional API hands back the caller's handle.
Tensor& add_(Tensor& self, T other) { return call_inplace<ops::structured_add>(self, other); }
Tensor& add_(Tensor& self, double other) { return call_inplace<ops::structured_add_Scalar>(self, other); }
Tensor& mul_(Tensor& self, T other) { return call_inplace<ops::structured_mul>(self, other); }
Tensor& mul_(Tensor& self, double other) { return call_inplace<ops::structured_mul_Scalar>(self, other); }
Tensor& relu_(Tensor& self) { return call_inplace<ops::structured_relu>(self); }
Tensor& zero_(Tensor& self) { return call_inplace<ops::structured_zero_>(self); }
Tensor& fill_(Tensor& self, double v) { return call_inplace<ops::structured_fill_>(self, v); }
Tensor& copy_(Tensor& self, T src) { return call_inplace<ops::structured_copy_>(self, src); }
Tensor& uniform_(Tensor& self, double from, double to, Generator* g) {
  return call_inplace<ops::structured_uniform_>(self, from, to, g);
}
Tensor& normal_(Tensor& self, double mean, double std, Generator* g) {
  return call_inplace<ops::structured_normal_>(self, mean, std, g);
}
Tensor& addcmul_(Tensor& self, T t1, T t2, double value) {
  return call_inplace<ops::structured_addcmul_>(self, t1, t2, value);
}
Tensor& _fused_adamw_(Tensor& self, Tensor& exp_avg, Tensor& exp_avg_sq, T grad, double lr, double beta1, double beta2,
                      double weight_decay, double eps, int64_t step, bool maximize) {
  return call_inplace<ops::structured__fused_adamw_>(self, exp_avg, exp_avg_sq, grad, lr, beta1, beta2, weight_decay,
                                                     eps, step, maximize);
}
Tensor& _fused_sgd_(Tensor& self, T grad, T momentum_buffer, double weight_decay, double momentum, double lr,
                    double dampening, bool nesterov, bool maximize, bool is_first_step) {
  return call_inplace<ops::structured__fused_sgd_>(self, grad, momentum_buffer, weight_decay, momentum, lr, dampening,
                                                   nesterov, maximize, is_first_step);
}
Tensor& addcdiv_(Tensor& self, T t1, T t2, double value) {
  return call_inplace<ops::structured_addcdiv_>(self, t1, t2, value);
}
Tensor& lerp_(Tensor& self, T end, double weight) { return call_inplace<ops::structured_lerp_>(self, end, weight); }

#undef REMAT_OP

}  // namespace remat
