// Mirrors torch/csrc/autograd/functions/tensor.h (CopySlices): the history of a tensor after an
// in-place op on one of its views.
#pragma once

#include <memory>
#include <string>

#include "engine/autograd/node.h"
#include "engine/core/tensor_geometry.h"

namespace remat::autograd {

// Note [View + Inplace update for base tensor]. After `view.op_(...)`, the base's gradient is the
// incoming gradient everywhere but on the view's elements, where it is op's backward (fn) applied
// to that slice. CopySlices takes fn's edges as its own, except edge 0, which goes to the base's
// previous history instead of the view's. The slice is found from the two geometries (the view
// as_strided within the base), so CopySlices keeps no tensor.
class CopySlices : public Node {
 public:
  CopySlices(const Tensor& base, TensorGeometry view, std::shared_ptr<Node> fn);

  variable_list apply(variable_list&& grads) override;
  void release_variables() override { fn_.reset(); }
  std::string name() const override { return "CopySlices"; }

  const std::shared_ptr<Node>& fn() const { return fn_; }
  const TensorGeometry& base_geometry() const { return base_; }
  const TensorGeometry& view_geometry() const { return view_; }

 private:
  // In a grad() or backward(inputs=...) call, lets fn compute its gradient 0 (its edge 0, the
  // view's old history, is not on the graph the engine walked).
  void update_exec_info();

  TensorGeometry base_;
  TensorGeometry view_;
  std::shared_ptr<Node> fn_;
};

}  // namespace remat::autograd
