// The meta functions (input checks + output geometry) shared by every backend's kernels: the
// CPU and Meta kernels in ops/*.cpp and the CUDA kernels in ops/cuda/*.cpp use the same ones,
// as PyTorch's structured kernels share one meta function. Each is defined beside its CPU
// kernel (ops/pointwise_meta.cpp, reduction.cpp, linalg.cpp, copy.cpp, factory.cpp).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/tensor.h"
#include "ops/op_utils.h"

namespace remat::ops {

// ---- ops/pointwise_meta.cpp: the elementwise ops of ops/pointwise.def ----
// op: the name errors give (the table's, e.g. "aten::add" or "aten::add_").
TensorMeta binary_meta(const char* op, const Tensor& a, const Tensor& b);
TensorMeta unary_meta(const char* op, const Tensor& a, bool floating_only);
// An in-place op writes into self: m (the functional meta's result) must be self's shape and
// castable to self's dtype; self must not overlap itself.
void check_inplace_result(const char* op, const Tensor& self, const TensorMeta& m);
// div is true division: integer inputs give a float result.
TensorMeta div_meta(const char* op, const Tensor& a, const Tensor& b);
// A fractional (or non-finite) scalar cannot be applied to an integer tensor without promotion.
bool is_fractional(double s);
// tensor op scalar: the scalar does not promote a floating tensor (a "wrapped number"); an
// integer tensor stays integral for an integral scalar, else becomes float (or for true_div).
TensorMeta scalar_meta(const char* op, const Tensor& a, double s, bool true_div = false);
TensorMeta div_scalar_meta(const char* op, const Tensor& a, double s);
TensorMeta pow_meta(const char* op, const Tensor& a, double e);
// self op= s: a fractional scalar cannot be stored in an integer tensor; no internal overlap.
void check_inplace_scalar(const char* op, const Tensor& self, double s);
void check_gelu_approximate(const std::string& approximate);
TensorMeta gelu_meta(const char* op, const Tensor& a, const std::string& approximate);
void check_bool_mask(const char* op, const Tensor& mask);
// eq: the broadcast shape, a Bool result (the inputs are compared in their promoted dtype).
TensorMeta eq_meta(const char* op, const Tensor& a, const Tensor& b);
TensorMeta where_meta(const char* op, const Tensor& cond, const Tensor& a, const Tensor& b);
TensorMeta masked_fill_meta(const char* op, const Tensor& self, const Tensor& mask, double value);
// The fused backward kernels: grad_input = f(grad_output, x), broadcasting, a floating result.
TensorMeta grad_meta(const char* op, const Tensor& grad_output, const Tensor& x);
TensorMeta threshold_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self, double threshold);
TensorMeta gelu_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self,
                              const std::string& approximate);
// An in-place update of a floating self by other operands that broadcast to self's shape
// (addcmul_, addcdiv_, lerp_: the optimizers' updates).
void inplace_update_meta(const char* op, const Tensor& self, std::initializer_list<const Tensor*> others);
void addc_meta(const char* op, const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, double value);
void lerp_meta(const char* op, const Tensor& self, const Tensor& end, double weight);

// ---- ops/reduction.cpp ----
// Which dims are reduced (all when dims is None or empty).
std::vector<bool> reduced_mask(const char* op, const Tensor& self, const std::optional<Shape>& dims);
Shape reduced_shape(const Tensor& self, const std::vector<bool>& mask, bool keepdim);
TensorMeta reduce_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim,
                       bool floating_only);
void check_amax_nonempty(const Tensor& self, int64_t dim);
// The Defs' meta functions (ops/reduction_defs.h): mean refuses integers; amax an empty self.
TensorMeta sum_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim);
TensorMeta mean_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim);
TensorMeta amax_meta(const char* op, const Tensor& self, int64_t dim, bool keepdim);
// The dims amax reduces, as sum's and mean's are given.
inline std::optional<Shape> reduced_dims(int64_t dim) { return Shape{dim}; }
inline const std::optional<Shape>& reduced_dims(const std::optional<Shape>& dims) { return dims; }

// ---- ops/fused_adam.cpp ----
// _fused_adamw_'s meta function (ops/fused_optimizer_defs.h; op: the name errors give): the
// parameter Float, Double or BFloat16; moments and gradient of its size and dtype, on its device;
// parameter and moments contiguous; step >= 1; on CUDA (and on Meta counting like CUDA) neither a
// BFloat16 parameter nor maximize.
void fused_adamw_meta(const char* op, const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const Tensor& grad, double lr, double beta1, double beta2, double weight_decay, double eps,
                      int64_t step, bool maximize);

// ---- ops/fused_sgd.cpp ----
// _fused_sgd_'s meta function (ops/fused_optimizer_defs.h): the parameter contiguous, Float,
// Double or BFloat16; grad and momentum_buffer matching it; momentum_buffer defined exactly when
// momentum != 0.
void fused_sgd_meta(const char* op, const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer,
                    double weight_decay, double momentum, double lr, double dampening, bool nesterov, bool maximize,
                    bool is_first_step);

// ---- ops/linalg.cpp ----
// How a strided 2-D operand [rows, cols] is passed to GEMM: row-major (trans=false, ld = stride
// of rows) or as the transpose of a row-major matrix (trans=true, ld = stride of cols); an
// undefined t when neither fits (the caller makes it contiguous).
struct GemmOperand {
  Tensor t;  // the data (possibly a contiguous copy)
  bool trans;
  int64_t ld;
};
GemmOperand gemm_operand(const Tensor& m, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols);
// op: the op named in errors (addmm checks its two matrices as mm does).
TensorMeta mm_meta(const char* op, const Tensor& a, const Tensor& b);
// bmm's batch dims: one in PyTorch, up to this many here (matmul's strided N-D operands).
constexpr int64_t kMaxBmmBatchDims = 4;
TensorMeta bmm_meta(const char* op, const Tensor& a, const Tensor& b);
TensorMeta addmm_meta(const char* op, const Tensor& bias, const Tensor& a, const Tensor& b);

// ---- ops/copy.cpp ----
void check_copy(const Tensor& self, const Tensor& src);
TensorMeta cat_meta(const std::vector<Tensor>& tensors, int64_t dim);
void check_triu(const Tensor& self);
// The part of slice_backward's output [input_sizes] that grad is written into.
Tensor slice_backward_part(const char* op, const Tensor& out, const Tensor& grad, const Shape& input_sizes,
                           int64_t dim, int64_t start, int64_t step);

// ---- ops/factory.cpp ----
// dtype, overlap and argument checks of uniform_ / normal_
void check_uniform(const Tensor& self, double from, double to);
void check_normal(const Tensor& self, double std);

// ---- ops/softmax.cpp ----
// A contiguous tensor seen as [outer, dim_size, inner] around dim (a 0-d tensor is one element).
struct SoftmaxGeometry {
  int64_t outer = 1, dim_size = 1, inner = 1;
};
SoftmaxGeometry softmax_geometry(const Shape& sizes, int64_t dim);
TensorMeta softmax_meta(const char* op, const Tensor& self, int64_t dim);
// grad_output and output: one shape, one floating dtype, one device.
TensorMeta softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim);
// _masked_softmax (mask: true where masked out) over the last dim: rows of dim_size elements,
// row r reading mask row r % mask_rows.
struct MaskedSoftmaxGeometry {
  int64_t rows = 0, dim_size = 1, mask_rows = 1;
};
// self's mask of self's shape (mask_type 2), or for a 4-D self [B, H, L, S] an [L, S] mask every
// batch and head shares (mask_type 0); of another shape or dim mask_type is 2, as in PyTorch.
MaskedSoftmaxGeometry masked_softmax_geometry(const Shape& sizes, const Tensor& mask);
TensorMeta masked_softmax_meta(const char* op, const Tensor& self, const Tensor& mask, std::optional<int64_t> dim,
                               std::optional<int64_t> mask_type);
TensorMeta masked_softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output,
                                        const Tensor& mask, std::optional<int64_t> dim);

// ---- ops/normalization.cpp ----
struct NormGeometry {
  int64_t M = 1;  // rows: product of the leading dims
  int64_t N = 1;  // row length: product of normalized_shape
  Shape stat_shape;
  ScalarType stat_dtype = kFloat;
};
ScalarType stat_dtype_for(ScalarType input);
NormGeometry norm_geometry(const char* op, const Tensor& input, const Shape& normalized_shape);
// The Defs' meta functions (ops/normalization_defs.h); op: the name errors give.
NormGeometry layer_norm_meta(const char* op, const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                             const Tensor& bias, double eps);
NormGeometry layer_norm_backward_meta(const char* op, const Tensor& grad_out, const Tensor& input,
                                      const Shape& normalized_shape, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight, const Tensor& bias);
NormGeometry rms_norm_meta(const char* op, const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                           double eps);
NormGeometry rms_norm_backward_meta(const char* op, const Tensor& grad_out, const Tensor& input,
                                    const Shape& normalized_shape, const Tensor& rstd, const Tensor& weight);

// ---- ops/dropout.cpp ----
void check_probability(const char* op, double p);
// The scale of kept elements: 1 / (1 - p), 0 for p = 1.
double keep_scale(double p);
// The Defs' meta functions (ops/dropout_defs.h); op: the name errors give. native_dropout's
// outputs are (output, mask).
std::tuple<TensorMeta, TensorMeta> native_dropout_meta(const char* op, const Tensor& input, double p,
                                                       Generator* generator);
TensorMeta native_dropout_backward_meta(const char* op, const Tensor& grad_output, const Tensor& mask, double scale);

// ---- ops/embedding.cpp: the Defs' meta functions (ops/embedding_defs.h) ----
TensorMeta embedding_meta(const char* op, const Tensor& weight, const Tensor& indices);
TensorMeta embedding_backward_meta(const char* op, const Tensor& grad_output, const Tensor& indices,
                                   int64_t num_weights);

// ---- ops/loss.cpp: the Defs' meta functions (ops/loss_defs.h) ----
// logits [N, C] floating, targets Long [N]: the loss is a scalar of the logits' dtype.
TensorMeta cross_entropy_meta(const char* op, const Tensor& logits, const Tensor& targets);
// and grad_output of one element: the logits' gradient.
TensorMeta cross_entropy_backward_meta(const char* op, const Tensor& grad_output, const Tensor& logits,
                                       const Tensor& targets);

// ---- ops/flash_attention.cpp ----
// The fused attention ops' shared checks (the CPU's flash op and CUDA's efficient op): q, k and v
// defined, on one device; then one dtype, q [B, H, L, E], k and v [B, H, S, E].
void check_attention_operands(const char* op, const Tensor& q, const Tensor& k, const Tensor& v);
void check_attention_layout(const char* op, const Tensor& q, const Tensor& k, const Tensor& v);
// A backward's grad_out and out: query's shape and dtype; they and logsumexp defined, on query's device.
void check_attention_backward_operands(const char* op, const Tensor& grad_out, const Tensor& q, const Tensor& out,
                                       const Tensor& lse);
// What the fused attention ops' meta functions find (ops/attention_defs.h).
struct AttentionGeometry {
  int64_t B = 0, H = 0, L = 0, S = 0, E = 0;
  int64_t lse_len = 0;           // logsumexp's rows: L (flash), L rounded up to kAttentionLseAlign (efficient)
  ScalarType lse_dtype = kFloat;  // logsumexp's dtype
  double scale = 1.0;            // the softmax scale (1 / sqrt(E) when unset)
};
// The sizes and scale of checked operands q [B, H, L, E], k [B, H, S, E] (lse_len and lse_dtype:
// the caller's, per kernel).
AttentionGeometry attention_geometry(const Tensor& q, const Tensor& k, std::optional<double> scale);
// The Defs' meta functions (op: the name errors give); the flash op's on CPU (or Meta) tensors.
AttentionGeometry flash_attention_meta(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                                       double dropout_p, bool is_causal, const Tensor& attn_mask,
                                       std::optional<double> scale);
AttentionGeometry flash_attention_backward_meta(const char* op, const Tensor& grad_out, const Tensor& query,
                                                const Tensor& key, const Tensor& value, const Tensor& out,
                                                const Tensor& logsumexp, double dropout_p, bool is_causal,
                                                const Tensor& attn_mask, std::optional<double> scale);

// ---- ops/efficient_attention.cpp ----
AttentionGeometry efficient_attention_meta(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                                           const Tensor& attn_bias, bool compute_log_sumexp, double dropout_p,
                                           bool is_causal, std::optional<double> scale);
AttentionGeometry efficient_attention_backward_meta(const char* op, const Tensor& grad_out, const Tensor& query,
                                                    const Tensor& key, const Tensor& value, const Tensor& attn_bias,
                                                    const Tensor& out, const Tensor& logsumexp,
                                                    const Tensor& philox_seed, const Tensor& philox_offset,
                                                    double dropout_p, bool is_causal, std::optional<double> scale);
// A 0-d Long CPU tensor holding 0 (the efficient op's philox_seed and philox_offset, no dropout).
Tensor zero_philox_cpu();

}  // namespace remat::ops
