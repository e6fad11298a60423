// Mirrors torch/nn/utils/clip_grad.py (clip_grad_norm_) and the p-norms of
// torch.linalg.vector_norm it uses.
#include "nn/optim/clip_grad.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::nn::utils {

namespace {
void check_norm_type(double p) {
  REMAT_CHECK(p > 0 && !std::isnan(p), "clip_grad_norm_: norm_type must be positive or inf, got ", p);
}
}  // namespace

Tensor vector_norm(const Tensor& t, double p) {
  check_norm_type(p);
  Tensor flat = reshape(t, {t.numel()});
  if (std::isinf(p)) {
    // max |t|; the norm of no elements is 0
    if (t.numel() == 0) return zeros({}, TensorOptions().dtype(t.dtype()).device(t.device()));
    return amax(abs(flat), 0);
  }
  if (p == 2.0) return sqrt(sum(mul(flat, flat)));
  if (p == 1.0) return sum(abs(flat));
  return pow(sum(pow(abs(flat), p)), 1.0 / p);
}

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  check_norm_type(norm_type);
  autograd::NoGradGuard no_grad;
  DefaultMemoryPhaseGuard phase(MemoryPhase::Optimizer);  // part of the update, for the memory tracker
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    REMAT_CHECK(p.defined(), "clip_grad_norm_: a parameter is an undefined tensor");
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) return zeros({}, kFloat);  // torch.tensor(0.0)

  // Norm of each gradient, then the norm of those norms (on the first gradient's device).
  const Device device = grads[0].device();
  ScalarType dtype = grads[0].dtype();
  for (const Tensor& g : grads) dtype = promoteTypes(dtype, g.dtype());
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) {
    Tensor n = vector_norm(g, norm_type);
    if (n.device() != device) n = n.to(device);
    if (n.dtype() != dtype) n = n.to(dtype);
    norms.push_back(reshape(n, {1}));
  }
  Tensor total_norm = vector_norm(cat(norms, 0), norm_type);
  if (error_if_nonfinite) {
    double v = total_norm.item();
    REMAT_CHECK(std::isfinite(v), "clip_grad_norm_: The total norm of order ", norm_type,
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
                "and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False` (total norm ",
                v, ")");
  }
  // max_norm / (total + eps), computed as PyTorch's Python does: reciprocal, then times max_norm.
  Tensor denom = add(total_norm, 1e-6);
  Tensor clip_coef = mul(div(ones_like(denom), denom), max_norm);
  Tensor clip_coef_clamped = minimum(clip_coef, ones_like(clip_coef));
  for (Tensor& g : grads) {
    Tensor coef = g.device() == device ? clip_coef_clamped : clip_coef_clamped.to(g.device());
    mul_(g, coef);
  }
  return total_norm;
}

Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace remat::nn::utils
