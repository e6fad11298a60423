// Mirrors torch/csrc/autograd/engine.cpp (Engine::execute, compute_dependencies,
// evaluate_function, validate_outputs) for single-threaded execution.
#include "engine/autograd/engine.h"

#include <atomic>
#include <queue>
#include <unordered_set>

#include "engine/autograd/grad_mode.h"
#include "engine/core/memory_context.h"
#include "engine/autograd/input_buffer.h"
#include "engine/autograd/ops_by_name.h"

namespace remat::autograd {

namespace {

thread_local std::vector<GraphTask*> tls_graph_tasks;
std::atomic<int64_t> g_next_graph_task_id{0};

// Pushes the task as the thread's current one; pops it even when backward throws.
struct CurrentGraphTaskGuard {
  explicit CurrentGraphTaskGuard(GraphTask* t) { tls_graph_tasks.push_back(t); }
  ~CurrentGraphTaskGuard() { tls_graph_tasks.pop_back(); }
};

// The root of a backward pass: hands the given gradients to the roots' edges.
class GraphRoot : public Node {
 public:
  GraphRoot(edge_list roots, variable_list grads) : Node(std::move(roots)), grads_(std::move(grads)) {}
  variable_list apply(variable_list&&) override { return grads_; }
  std::string name() const override { return "GraphRoot"; }

 private:
  variable_list grads_;
};

struct ReadyItem {
  std::shared_ptr<Node> fn;
  bool operator<(const ReadyItem& o) const { return fn->sequence_nr() < o.fn->sequence_nr(); }
};

void compute_dependencies(Node* root, GraphTask& task) {
  std::vector<Node*> stack{root};
  std::unordered_set<Node*> seen{root};
  while (!stack.empty()) {
    Node* fn = stack.back();
    stack.pop_back();
    // In a partial run, edges out of nodes that will not run do not count.
    if (!task.exec_info.empty()) {
      auto it = task.exec_info.find(fn);
      if (it == task.exec_info.end() || !it->second.needed) continue;
    }
    for (const Edge& e : fn->next_edges()) {
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      task.dependencies[next] += 1;
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
}

// Marks which nodes must run so that every output edge receives its gradient
// (GraphTask::init_to_execute).
void init_to_execute(Node* root, GraphTask& task, const edge_list& outputs, bool accumulate_grad) {
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    const Edge& e = outputs[i];
    if (!e.is_valid()) continue;
    auto& info = task.exec_info[e.function.get()];
    if (accumulate_grad) {
      info.needed = true;  // backward(inputs=leaf): its AccumulateGrad runs
    } else {
      info.captures.push_back({e.input_nr, i});
    }
  }
  // Post-order DFS: a node is needed if any child should execute.
  struct Frame {
    Node* fn;
    size_t next;
  };
  std::unordered_set<Node*> visited{root};
  std::vector<Frame> stack{{root, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.fn->next_edges().size()) {
      Node* child = f.fn->next_edges()[f.next++].function.get();
      if (child != nullptr && visited.insert(child).second) stack.push_back({child, 0});
      continue;
    }
    Node* fn = f.fn;
    stack.pop_back();
    for (const Edge& e : fn->next_edges()) {
      if (!e.is_valid()) continue;
      auto it = task.exec_info.find(e.function.get());
      if (it != task.exec_info.end() && it->second.should_execute()) {
        task.exec_info[fn].needed = true;
        break;
      }
    }
  }
}

// Checks (and where PyTorch does, fixes) the gradients a node returned.
void validate_outputs(const Node& fn, variable_list& grads) {
  REMAT_CHECK(grads.size() == fn.num_outputs(), "function ", fn.name(), " returned an incorrect number of gradients (expected ",
              fn.num_outputs(), ", got ", grads.size(), ")");
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& e = fn.next_edge(i);
    Tensor& g = grads[i];
    if (!e.is_valid() || !g.defined()) continue;
    const InputMetadata& meta = e.function->input_metadata(e.input_nr);
    if (g.sizes() != meta.shape) {
      // A gradient of a shape the input broadcasts to is summed back (PyTorch does the same).
      bool expandable = g.dim() >= static_cast<int64_t>(meta.shape.size());
      for (size_t d = 1; expandable && d <= meta.shape.size(); ++d) {
        int64_t want = meta.shape[meta.shape.size() - d], got = g.sizes()[g.sizes().size() - d];
        expandable = want == got || want == 1;
      }
      REMAT_CHECK(expandable, "Function ", fn.name(), " returned an invalid gradient at index ", i,
                  " - got ", g.sizes(), " but expected shape compatible with ", meta.shape);
      g = ops_by_name::sum_to_size(g, meta.shape);
    }
    if (g.dtype() != meta.dtype) g = ops_by_name::to_dtype(g, meta.dtype);
    REMAT_CHECK(g.device() == meta.device, "Function ", fn.name(), " returned an invalid gradient at index ", i,
                " - expected device ", meta.device, " but got ", g.device());
  }
}

}  // namespace

GraphTask* current_graph_task() { return tls_graph_tasks.empty() ? nullptr : tls_graph_tasks.back(); }

Engine& Engine::get_default_engine() {
  static Engine engine;
  return engine;
}

int64_t Engine::current_graph_task_id() {
  GraphTask* t = current_graph_task();
  return t ? static_cast<int64_t>(t->id) : -1;
}

int64_t Engine::new_graph_task_id() { return g_next_graph_task_id.fetch_add(1); }

bool Engine::is_checkpoint_valid() {
  GraphTask* t = current_graph_task();
  return t == nullptr || t->exec_info.empty();
}

int Engine::reentrant_depth() { return static_cast<int>(tls_graph_tasks.size()); }

variable_list Engine::execute(const edge_list& roots, const variable_list& grads, bool keep_graph,
                              bool create_graph, bool accumulate_grad, const edge_list& outputs) {
  GraphTask task;
  task.id = static_cast<uint64_t>(new_graph_task_id());
  task.keep_graph = keep_graph;
  task.create_graph = create_graph;
  task.reentrant_depth = reentrant_depth();

  auto root = std::make_shared<GraphRoot>(roots, grads);
  if (!outputs.empty()) {
    init_to_execute(root.get(), task, outputs, accumulate_grad);
    task.captured_vars.resize(outputs.size());
  }
  compute_dependencies(root.get(), task);

  CurrentGraphTaskGuard current(&task);
  AutoGradMode grad_mode(create_graph);  // backward formulas record only for create_graph
  // What the memory tracker calls this (a rerun of a checkpointed region inside it says
  // "recompute" itself).
  MemoryPhaseGuard phase(MemoryPhase::Backward);

  std::priority_queue<ReadyItem> ready;
  std::unordered_map<Node*, InputBuffer> not_ready;
  ready.push({root});
  bool root_done = false;

  while (!ready.empty()) {
    std::shared_ptr<Node> fn = ready.top().fn;
    ready.pop();
    variable_list inputs;
    if (root_done) {
      auto it = not_ready.find(fn.get());
      REMAT_INTERNAL_ASSERT(it != not_ready.end());
      inputs = it->second.take();
      not_ready.erase(it);
    }
    root_done = true;

    bool run = true, hooks_done = false;
    if (!task.exec_info.empty()) {
      auto it = task.exec_info.find(fn.get());
      const GraphTask::ExecInfo* info = it == task.exec_info.end() ? nullptr : &it->second;
      if (info != nullptr && !info->captures.empty()) {
        // Captured after the tensor hooks, which run once even if the node runs too.
        inputs = fn->call_tensor_pre_hooks(std::move(inputs));
        hooks_done = true;
        for (const auto& c : info->captures) task.captured_vars[c.output_idx] = inputs[c.input_idx];
      }
      run = info != nullptr && info->needed;
    }
    if (!run) continue;

    if (!hooks_done) inputs = fn->call_tensor_pre_hooks(std::move(inputs));
    for (const auto& hook : fn->pre_hooks()) inputs = hook(inputs);
    variable_list grad_inputs = inputs;  // kept only for post hooks
    if (fn->post_hooks().empty()) grad_inputs.clear();
    variable_list outs = (*fn)(std::move(inputs));
    if (!keep_graph) fn->release_variables();
    for (const auto& hook : fn->post_hooks()) outs = hook(outs, grad_inputs);
    validate_outputs(*fn, outs);

    for (size_t i = 0; i < outs.size(); ++i) {
      const Edge& e = fn->next_edge(i);
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      auto dep = task.dependencies.find(next);
      if (dep == task.dependencies.end()) continue;  // not on a path that runs
      auto buf = not_ready.try_emplace(next, next->num_inputs()).first;
      buf->second.add(e.input_nr, std::move(outs[i]));
      if (--dep->second == 0) {
        task.dependencies.erase(dep);
        ready.push({e.function});
      }
    }
  }
  return std::move(task.captured_vars);
}

}  // namespace remat::autograd
