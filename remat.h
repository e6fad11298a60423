// remat: activation checkpointing the way PyTorch does it, in one C++17 library.
//
//   #include "remat.h"
//   using namespace remat;
//
//   Tensor w = randn({256, 256}).requires_grad_();
//   Tensor x = randn({32, 256});
//   // Drop the block's activations in forward; recompute them in backward.
//   Tensor y = checkpoint([&](const Tensor& h) { return relu(mm(h, w)).sin(); }, x);
//   y.sum().backward();          // w.grad() is the same as without checkpoint
//
// The parts, in layer order (dependencies point one way: engine <- ops <- checkpoint <- nn); each
// header's first line names its PyTorch counterpart.
//   engine/core        tensor.h (Tensor, TensorOptions, factories), allocator.h (memory_allocated,
//                      memory_reserved, empty_cache), dry_run.h (DryRun: a step on the Meta device),
//                      memory_stats.h (the counters and storage events both count in),
//                      memory_context.h + memory_tracker.h (what each byte is, event by event),
//                      generator.h, ivalue.h, cuda_hooks.h (cuda_is_available), version.h,
//                      byte_size.h ("40MiB" <-> bytes), clock.h (wall and process CPU time),
//                      cli.h (flags' numbers read strictly; main's errors), file_io.h (inputs checked,
//                      outputs written to a temporary name and renamed), safe_numerics.h (products
//                      of sizes checked for overflow), out_of_memory.h (a failed allocation of a
//                      known size, named)
//   engine/dispatch    dispatcher.h (ops, typed and boxed calls), library.h (registration),
//                      dispatch_mode.h (TorchDispatchMode: the stack SAC is built on)
//   engine/autograd    variable.h, autograd.h + engine.h (backward, grad), grad_mode.h,
//                      custom_function.h (autograd.Function), saved_variable_hooks.h (pack/unpack)
//   ops                functions.h (every aten op), custom_op.h (torch.library.custom_op),
//                      autocast.h, sdpa_kernel.h (SDPBackend), gradcheck.h
//   checkpoint         checkpoint.h (reentrant and non-reentrant), selective.h + policies.h (SAC),
//                      offload.h (save_on_cpu), planner.h (plan_checkpointing: a budget in, a plan
//                      out), plan_file.h (a plan as a versioned file), scope.h, stats.h (recompute
//                      accounting), trace.h
//   nn                 module.h, linear.h, embedding.h, normalization.h, dropout.h, transformer.h,
//                      gpt.h, llama.h, init.h, serialization.h (safetensors), optim/ (AdamW, SGD, clip_grad)
#pragma once

#include "engine/core/allocator.h"
#include "engine/core/byte_size.h"
#include "engine/core/cli.h"
#include "engine/core/clock.h"
#include "engine/core/cuda_hooks.h"
#include "engine/core/dry_run.h"
#include "engine/core/file_io.h"
#include "engine/core/generator.h"
#include "engine/core/ivalue.h"
#include "engine/core/memory_context.h"
#include "engine/core/memory_stats.h"
#include "engine/core/memory_tracker.h"
#include "engine/core/out_of_memory.h"
#include "engine/core/safe_numerics.h"
#include "engine/core/tensor.h"
#include "engine/core/version.h"

#include "engine/dispatch/dispatch_mode.h"
#include "engine/dispatch/dispatcher.h"
#include "engine/dispatch/library.h"

#include "engine/autograd/autograd.h"
#include "engine/autograd/custom_function.h"
#include "engine/autograd/engine.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/saved_variable_hooks.h"
#include "engine/autograd/variable.h"

#include "ops/autocast.h"
#include "ops/custom_op.h"
#include "ops/functions.h"
#include "ops/gradcheck.h"
#include "ops/sdpa_kernel.h"

#include "checkpoint/checkpoint.h"
#include "checkpoint/offload.h"
#include "checkpoint/plan_file.h"
#include "checkpoint/planner.h"
#include "checkpoint/policies.h"
#include "checkpoint/scope.h"
#include "checkpoint/selective.h"
#include "checkpoint/stats.h"
#include "checkpoint/trace.h"

#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/gpt.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/llama.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "nn/optim/adamw.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/sgd.h"
#include "nn/serialization.h"
#include "nn/transformer.h"
