// Mirrors tools/autograd/derivatives.yaml and the generated VariableType / Functions.h:
// a derivative rule per op, and the context a rule reads when it runs in backward.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/node.h"
#include "engine/autograd/saved_variable.h"
#include "engine/core/ivalue.h"
#include "engine/core/tensor_geometry.h"

namespace remat::ops::autograd {

using remat::autograd::InputMetadata;
using remat::autograd::SavedVariable;

class FormulaNode;

// What a derivative rule sees: the incoming gradients, the saved tensors, every non-tensor
// argument, and the metadata of every tensor input.
class BackwardContext {
 public:
  BackwardContext(const FormulaNode& node, const std::vector<Tensor>& grads) : node_(node), grads_(grads) {}

  const Tensor& grad(size_t output = 0) const { return grads_.at(output); }
  // A saved tensor argument, by argument position (undefined for a None optional argument). A
  // rule reads one only while computing a gradient its table entry names.
  Tensor input(size_t arg) const;
  Tensor result(size_t output = 0) const;  // a saved output, under the same rule
  const IValue& arg(size_t arg) const;     // a non-tensor argument
  double scalar(size_t a) const { return arg(a).toDouble(); }
  int64_t integer(size_t a) const { return arg(a).toInt(); }
  Shape ints(size_t a) const { return arg(a).isNone() ? Shape{} : arg(a).toIntVector(); }
  bool flag(size_t a) const { return arg(a).toBool(); }
  const std::string& str(size_t a) const { return arg(a).toStringRef(); }
  bool is_none(size_t a) const;
  // Metadata of the tensor at argument position arg (or element k of a Tensor[] argument).
  const InputMetadata& meta(size_t arg, size_t k = 0) const;
  size_t list_size(size_t arg) const;  // elements of a Tensor[] argument
  // Sizes, strides and storage offset of the tensor at argument position arg (saved_geometries).
  const TensorGeometry& geometry(size_t arg) const;
  // Whether the gradient of the tensor at argument position arg is wanted.
  bool needs(size_t arg, size_t k = 0) const;

 private:
  const FormulaNode& node_;
  const std::vector<Tensor>& grads_;
  // Each saved tensor is unpacked once per backward call, as the generated apply() does: a
  // checkpoint holder can be unpacked only once per graph task.
  mutable std::vector<Tensor> unpacked_inputs_, unpacked_results_;
};

// Returns one gradient per tensor input, in argument order (Tensor[] arguments contribute one
// per element); undefined where not needed or not differentiable.
using Formula = std::function<std::vector<Tensor>(const BackwardContext&)>;

// A tensor a rule saves for backward, with the arguments whose gradients read it (in
// derivatives.yaml, the per-input formulas that name it). It is saved only when one of those
// gradients is needed, i.e. the argument requires grad: PyTorch's generated VariableType code
// guards each SavedVariable with should_compute_output the same way.
struct SavedTensor {
  enum class Kind { Argument, Output };
  Kind kind;
  size_t index;                 // argument position, or output index
  std::vector<size_t> read_by;  // argument positions (tensor arguments) whose gradient reads it
};

struct Derivative {
  std::string op;                        // "aten::mul" (set from the Def: Def::name, Def::inplace_name)
  std::vector<SavedTensor> saved;        // what backward may read, and for which gradients
  std::vector<size_t> saved_geometries;  // tensor arguments whose geometry, not data, the rule reads
  std::vector<size_t> non_differentiable_outputs;
  bool inplace = false;               // argument 0 is modified in place and returned
  bool non_differentiable = false;    // outputs never require grad (zeros_like, detach, ...)
  Formula formula;
};

// Registers the rule's autograd kernel for op (ops/autograd/derivatives.cpp calls this for every
// Def's rule). Throws for a rule without an op name, or for an op that has a rule already.
void register_derivative(Derivative d);

}  // namespace remat::ops::autograd
