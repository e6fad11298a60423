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
// Layers (each header names its PyTorch counterpart):
//   engine/   tensors, dispatcher + dispatch modes, autograd engine + saved-tensor hooks
//   ops/      every aten op: schema, meta function, CPU kernel, derivative, autocast rule
//   checkpoint/  checkpoint (reentrant and not), selective checkpoint (SAC), offload
//   nn/       modules, optimizers, a small GPT
#pragma once

#include "checkpoint/checkpoint.h"
#include "checkpoint/offload.h"
#include "checkpoint/planner.h"
#include "checkpoint/policies.h"
#include "checkpoint/scope.h"
#include "checkpoint/selective.h"
#include "checkpoint/stats.h"
#include "checkpoint/trace.h"
#include "engine/autograd/autograd.h"
#include "engine/autograd/custom_function.h"
#include "engine/autograd/engine.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/saved_variable_hooks.h"
#include "engine/autograd/variable.h"
#include "engine/core/allocator.h"
#include "engine/core/cuda_hooks.h"
#include "engine/core/dry_run.h"
#include "engine/core/generator.h"
#include "engine/core/ivalue.h"
#include "engine/core/memory_context.h"
#include "engine/core/memory_tracker.h"
#include "engine/core/tensor.h"
#include "engine/core/version.h"
#include "engine/dispatch/dispatch_mode.h"
#include "engine/dispatch/dispatcher.h"
#include "engine/dispatch/library.h"
#include "ops/autocast.h"
#include "ops/custom_op.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/gpt.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "nn/optim/adamw.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/sgd.h"
#include "nn/serialization.h"
#include "nn/transformer.h"
#include "ops/functions.h"
#include "ops/sdpa_kernel.h"
#include "ops/gradcheck.h"

