// Mirrors torch/nn/utils/clip_grad.py (clip_grad_norm_): rescales gradients in place so that
// their total norm is at most max_norm.
//
//   total = || (||g_1||_p, ..., ||g_n||_p) ||_p        (the norm of all gradients as one vector)
//   clip_coef = min(max_norm / (total + 1e-6), 1)
//   g_i *= clip_coef                                   (also when clip_coef is 1, as PyTorch does)
//
// Parameters without a gradient are skipped. Everything stays on the gradients' device (no
// host synchronisation) unless error_if_nonfinite asks to look at the norm.
#pragma once

#include <limits>
#include <vector>

#include "engine/core/tensor.h"

namespace remat::nn::utils {

// Returns the total norm (a 0-dim tensor of the gradients' promoted dtype; 0.0 when no
// parameter has a gradient). norm_type: any p > 0, or infinity for the largest |g|.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// ||t||_p over all elements (torch.linalg.vector_norm for p > 0 and p = inf), through the
// dispatcher.
Tensor vector_norm(const Tensor& t, double p = 2.0);

}  // namespace remat::nn::utils
