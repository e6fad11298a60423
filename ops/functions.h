// Mirrors the generated ATen/Functions.h: the functional API. Each function calls one
// dispatcher op (aten::<name>) through its typed handle; see ops/native_functions.cpp.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/core/generator.h"
#include "engine/core/tensor.h"

namespace remat {

// ---- factories (allocate, then fill through an op: fill_, uniform_, normal_) ----
Tensor empty(const Shape& size, TensorOptions options = {});
Tensor zeros(const Shape& size, TensorOptions options = {});
Tensor ones(const Shape& size, TensorOptions options = {});
Tensor full(const Shape& size, double value, TensorOptions options = {});
// arange(end), arange(start, end), arange(start, end, step): [start, end) in steps of step. As in
// torch.arange, a dtype in options is used as given; without one, the result is int64 (kLong)
// when every argument is an integer and float (the default dtype) when any is floating-point.
// RangeValue keeps which one an argument was, as c10::Scalar does.
struct RangeValue {
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  RangeValue(T v) : is_integral(std::is_integral_v<T>), d(static_cast<double>(v)) {  // NOLINT: arange(5)
    if constexpr (std::is_integral_v<T>) i = static_cast<int64_t>(v);
  }
  bool is_integral;
  int64_t i = 0;  // the value, if is_integral
  double d;       // the value as a double
};
Tensor arange(RangeValue end, TensorOptions options = {});
Tensor arange(RangeValue start, RangeValue end, TensorOptions options = {});
Tensor arange(RangeValue start, RangeValue end, RangeValue step, TensorOptions options = {});
Tensor rand(const Shape& size, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(const Shape& size, TensorOptions options = {}, Generator* generator = nullptr);
Tensor from_vector(const std::vector<double>& values, const Shape& size, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);

bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b);  // same shape and bitwise-equal values

// ---- pointwise ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor silu(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor gelu(const Tensor& a, const std::string& approximate = "none");
Tensor eq(const Tensor& a, const Tensor& b);  // bool
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);
Tensor maximum(const Tensor& a, const Tensor& b);  // elementwise; NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor triu(const Tensor& a, int64_t diagonal = 0);

// backward kernels (called by derivative formulas; public like PyTorch's)
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, double threshold);
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output);
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output);
Tensor silu_backward(const Tensor& grad_output, const Tensor& self);
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, const std::string& approximate = "none");

// ---- matrix products ----
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- reductions ----
Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const Shape& dims, bool keepdim = false);
Tensor amax(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor sum_to_size(const Tensor& a, const Shape& size);

// ---- normalisation, attention, losses ----
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);
Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim);
Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim);
// softmax over the last dim with mask (Bool, true: masked out, 0 in the output; a row masked
// throughout is zeros): of a's shape, or [L, S] for a 4-D a with mask_type 0 (PyTorch's
// aten::_masked_softmax)
Tensor _masked_softmax(const Tensor& a, const Tensor& mask, std::optional<int64_t> dim = std::nullopt,
                       std::optional<int64_t> mask_type = std::nullopt);
Tensor _masked_softmax_backward(const Tensor& grad_output, const Tensor& output, const Tensor& mask,
                                std::optional<int64_t> dim = std::nullopt);
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& x, const Shape& normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps);
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                              const Shape& normalized_shape,
                                                              const Tensor& mean, const Tensor& rstd,
                                                              const Tensor& weight, const Tensor& bias);
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, double eps = 1e-6);
std::tuple<Tensor, Tensor> _fused_rms_norm(const Tensor& x, const Shape& normalized_shape,
                                           const Tensor& weight, double eps);
std::tuple<Tensor, Tensor> _fused_rms_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                    const Shape& normalized_shape, const Tensor& rstd,
                                                    const Tensor& weight);
Tensor dropout(const Tensor& x, double p, bool train, Generator* generator = nullptr);
std::tuple<Tensor, Tensor> native_dropout(const Tensor& x, double p, Generator* generator = nullptr);
Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale);
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights);
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& logits, const Tensor& targets);
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                    double dropout_p = 0.0, Generator* generator = nullptr);
// The fused attention (torch.ops.aten._scaled_dot_product_flash_attention_for_cpu): output
// [B, H, L, E] and the row log-sum-exp [B, H, L]; scale unset: 1 / sqrt(E).
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(const Tensor& query, const Tensor& key,
                                                                       const Tensor& value, double dropout_p = 0.0,
                                                                       bool is_causal = false,
                                                                       const Tensor& attn_mask = {},
                                                                       std::optional<double> scale = std::nullopt);
std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const Tensor& attn_mask = {},
    std::optional<double> scale = std::nullopt);
// The fused attention on CUDA (torch.ops.aten._scaled_dot_product_efficient_attention): output
// [B, H, L, E], log_sumexp [B, H, ceil(L / 32) * 32] (or [B, H, 0] without compute_log_sumexp),
// philox_seed and philox_offset (0-d Long on the CPU); scale unset: 1 / sqrt(E).
std::tuple<Tensor, Tensor, Tensor, Tensor> _scaled_dot_product_efficient_attention(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_bias, bool compute_log_sumexp,
    double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = std::nullopt);
// grad_query, grad_key, grad_value and an undefined grad_attn_bias.
std::tuple<Tensor, Tensor, Tensor, Tensor> _scaled_dot_product_efficient_attention_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_bias,
    const Tensor& out, const Tensor& logsumexp, const Tensor& philox_seed, const Tensor& philox_offset,
    double dropout_p, bool is_causal = false, std::optional<double> scale = std::nullopt);

// ---- views ----
Tensor view(const Tensor& a, const Shape& size);
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
// a with its two dims swapped (a 0-D or 1-D a as it is): aten::t, one op where transpose(a, 0, 1)
// is another (linear's weight.t(), as PyTorch's linear calls it).
Tensor t(const Tensor& a);
Tensor permute(const Tensor& a, const Shape& dims);
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor slice_backward(const Tensor& grad_output, const Shape& input_sizes, int64_t dim, int64_t start,
                      int64_t end, int64_t step);
// The size(dim) views a.select(dim, i), as torch.unbind; in backward their gradients are written
// into one buffer (a stack), where slices would each zero-fill a whole input-sized gradient. Like
// split's views, none of them may be modified in place (MULTI_OUTPUT_NODE).
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a, int64_t dim);
Tensor expand(const Tensor& a, const Shape& size);
Tensor detach(const Tensor& a);
// storage_offset: unset keeps a's own offset.
Tensor as_strided(const Tensor& a, const Shape& size, const Shape& stride,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
Tensor view_as(const Tensor& a, const Tensor& other);
// Several views of a: one op, so none of them may be modified in place (MULTI_OUTPUT_NODE).
std::vector<Tensor> split_with_sizes(const Tensor& a, const Shape& split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
// a's data with shape size, as view(a, size), but not a view: autograd treats it as a new tensor
// (aten::_unsafe_view: what matmul returns its bmm's output as, and reshape its copy as).
Tensor _unsafe_view(const Tensor& a, const Shape& size);
// complex [...] <-> real [..., 2], sharing storage (aten::view_as_real, aten::view_as_complex)
Tensor view_as_real(const Tensor& a);
Tensor view_as_complex(const Tensor& a);
// the complex conjugate, a new tensor (aten::conj_physical; remat has no lazy conjugate bit)
Tensor conj_physical(const Tensor& a);

// ---- copies and conversions ----
Tensor clone(const Tensor& a);
Tensor contiguous(const Tensor& a);
Tensor _to_copy(const Tensor& a, std::optional<ScalarType> dtype, std::optional<Device> device);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- in-place (bump the version counter) ----
Tensor& add_(Tensor& self, const Tensor& other);
Tensor& add_(Tensor& self, double other);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, double other);
Tensor& relu_(Tensor& self);
Tensor& zero_(Tensor& self);
Tensor& fill_(Tensor& self, double value);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& uniform_(Tensor& self, double from = 0.0, double to = 1.0, Generator* generator = nullptr);
Tensor& normal_(Tensor& self, double mean = 0.0, double std = 1.0, Generator* generator = nullptr);
// self += value * tensor1 * tensor2;  self += value * tensor1 / tensor2;  self += weight * (end - self)
Tensor& addcmul_(Tensor& self, const Tensor& tensor1, const Tensor& tensor2, double value = 1.0);
Tensor& addcdiv_(Tensor& self, const Tensor& tensor1, const Tensor& tensor2, double value = 1.0);
Tensor& lerp_(Tensor& self, const Tensor& end, double weight);
// AdamW's update of one parameter and its moments in one pass (torch._fused_adamw_, one tensor);
// step is the update's number, from 1.
Tensor& _fused_adamw_(Tensor& self, Tensor& exp_avg, Tensor& exp_avg_sq, const Tensor& grad, double lr, double beta1,
                      double beta2, double weight_decay, double eps, int64_t step, bool maximize = false);
// SGD's update of one parameter and its momentum buffer in one pass (torch._fused_sgd_, one
// tensor); momentum_buffer is undefined (None) when momentum is 0, and is_first_step writes the
// buffer without reading it (buf = the decayed gradient, as the single-tensor path's clone).
Tensor& _fused_sgd_(Tensor& self, const Tensor& grad, const Tensor& momentum_buffer, double weight_decay,
                    double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step);

}  // namespace remat
