// Mirrors torch/autograd/gradcheck.py (slow mode: the full Jacobians).
#include "ops/gradcheck.h"

#include <cmath>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/autograd/grad_mode.h"
#include "engine/core/generator.h"
#include "ops/functions.h"

namespace remat::autograd {

namespace {

std::vector<Tensor> differentiable_outputs(const std::vector<Tensor>& outs) {
  std::vector<Tensor> r;
  for (const Tensor& o : outs)
    if (o.defined() && isFloatingType(o.dtype())) r.push_back(o);
  return r;
}

// Runs fn with input i's element k shifted by delta (on a host copy, under no-grad).
std::vector<std::vector<double>> eval_shifted(const GradcheckFn& fn, const std::vector<Tensor>& inputs, size_t i,
                                              int64_t k, double delta) {
  NoGradGuard no_grad;
  std::vector<Tensor> args;
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (j != i) {
      args.push_back(inputs[j].defined() ? inputs[j].detach() : Tensor());
      continue;
    }
    Tensor host = inputs[j].detach().to(Device{kCPU}).to(kDouble).clone();
    host.data_ptr<double>()[k] += delta;
    args.push_back(host.to(inputs[j].dtype()).to(inputs[j].device()));
  }
  std::vector<std::vector<double>> values;
  for (const Tensor& o : differentiable_outputs(fn(args))) values.push_back(o.to_vector());
  return values;
}

}  // namespace

bool gradcheck(GradcheckFn fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  std::vector<size_t> checked;
  std::vector<Tensor> wrt;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    REMAT_CHECK(inputs[i].dtype() == kDouble, "gradcheck: input ", i,
                " is not double precision; finite differences need float64 (got ", toString(inputs[i].dtype()), ")");
    checked.push_back(i);
    wrt.push_back(inputs[i]);
  }
  REMAT_CHECK(!checked.empty(), "gradcheck: no input requires grad");

  std::vector<Tensor> outs = differentiable_outputs(fn(inputs));
  REMAT_CHECK(!outs.empty(), "gradcheck: the function returned no floating point output");

  for (size_t o = 0; o < outs.size(); ++o) {
    const int64_t n_out = outs[o].numel();
    // analytical[c][k][j] = d out_o[j] / d input_c[k], one backward per output element
    std::vector<std::vector<std::vector<double>>> analytical(
        wrt.size(), std::vector<std::vector<double>>(0));
    for (size_t c = 0; c < wrt.size(); ++c)
      analytical[c].assign(static_cast<size_t>(wrt[c].numel()), std::vector<double>(static_cast<size_t>(n_out), 0.0));
    for (int64_t j = 0; j < n_out; ++j) {
      std::vector<double> onehot(static_cast<size_t>(n_out), 0.0);
      onehot[static_cast<size_t>(j)] = 1.0;
      Tensor go = from_vector(onehot, outs[o].sizes(), TensorOptions().dtype(outs[o].dtype()).device(outs[o].device()));
      if (!outs[o].requires_grad()) continue;
      std::vector<Tensor> grads = grad({outs[o]}, wrt, {go}, /*retain_graph=*/true, /*create_graph=*/false,
                                       /*allow_unused=*/true);
      for (size_t c = 0; c < wrt.size(); ++c) {
        if (!grads[c].defined()) continue;
        std::vector<double> g = grads[c].to_vector();
        for (size_t k = 0; k < g.size(); ++k) analytical[c][k][static_cast<size_t>(j)] = g[k];
      }
    }
    for (size_t c = 0; c < wrt.size(); ++c) {
      size_t i = checked[c];
      for (int64_t k = 0; k < wrt[c].numel(); ++k) {
        auto plus = eval_shifted(fn, inputs, i, k, eps);
        auto minus = eval_shifted(fn, inputs, i, k, -eps);
        for (int64_t j = 0; j < n_out; ++j) {
          double numerical = (plus[o][static_cast<size_t>(j)] - minus[o][static_cast<size_t>(j)]) / (2 * eps);
          double a = analytical[c][static_cast<size_t>(k)][static_cast<size_t>(j)];
          if (!(std::abs(a - numerical) <= atol + rtol * std::abs(numerical))) {
            std::ostringstream msg;
            msg << "Jacobian mismatch for output " << o << " with respect to input " << i << ",\n"
                << "numerical:" << numerical << "\nanalytical:" << a << "\n(at input element " << k
                << ", output element " << j << "; input shape " << inputs[i].sizes() << ", output shape "
                << outs[o].sizes() << ")";
            throw Error(msg.str());
          }
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(GradcheckFn fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  std::vector<Tensor> outs = differentiable_outputs(fn(inputs));
  Generator gen(12345);
  std::vector<Tensor> grad_outputs;
  for (const Tensor& o : outs)
    grad_outputs.push_back(randn(o.sizes(), TensorOptions().dtype(kDouble).device(o.device()), &gen).requires_grad_(true));
  const size_t n_in = inputs.size();
  std::vector<bool> wanted(n_in);
  for (size_t i = 0; i < n_in; ++i) wanted[i] = inputs[i].defined() && inputs[i].requires_grad();
  GradcheckFn first_derivative = [fn, n_in, wanted](const std::vector<Tensor>& args) {
    std::vector<Tensor> gos(args.begin() + static_cast<std::ptrdiff_t>(n_in), args.end());
    bool analytical = GradMode::is_enabled();  // finite differences call this under no-grad
    EnableGradGuard enable;
    std::vector<Tensor> xs, wrt;
    for (size_t i = 0; i < n_in; ++i) {
      Tensor x = args[i];
      if (!analytical && x.defined()) x = x.detach().requires_grad_(wanted[i]);
      xs.push_back(x);
      if (wanted[i]) wrt.push_back(x);
    }
    std::vector<Tensor> ys = differentiable_outputs(fn(xs));
    return grad(ys, wrt, gos, /*retain_graph=*/true, /*create_graph=*/analytical, /*allow_unused=*/true);
  };
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  return gradcheck(first_derivative, all, eps, atol, rtol);
}

}  // namespace remat::autograd
