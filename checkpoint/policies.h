// remat's policy helpers for selective checkpointing (no PyTorch counterpart; torchtitan's
// _get_custom_policy and Megatron's selective recompute are the models).
//
//   o.context_fn = [] { return create_selective_checkpoint_contexts(policies::save_matmuls()); };
//   // torchtitan's default: save every other mm
//   o.context_fn = [] { return create_selective_checkpoint_contexts(policies::save_every_other({"aten::mm"})); };
//   // the seed's example: save matmuls except the MLP's fc2, whose output backward never needs
//   policies::compose({policies::recompute_scopes({"*.mlp.fc2"}), policies::save_matmuls()})
#pragma once

#include <string>
#include <vector>

#include "checkpoint/selective.h"

namespace remat::policies {

// MUST_SAVE the listed ops, PREFER_RECOMPUTE the rest.
PolicyFn save_ops(const std::vector<std::string>& ops);
// aten::mm, aten::bmm, aten::addmm (matmul and linear decompose into these).
PolicyFn save_matmuls();
// MUST_CPU_OFFLOAD the listed ops (their outputs go to pinned host memory on a CUDA device; kept
// as MUST_SAVE would keep them on the CPU), PREFER_RECOMPUTE the rest.
PolicyFn offload_ops(const std::vector<std::string>& ops);
// MUST_CPU_OFFLOAD every call under a matching scope; PREFER_RECOMPUTE elsewhere.
PolicyFn offload_scopes(const std::vector<std::string>& globs);
// Of the listed ops, MUST_SAVE the calls with an even index in the region (0, 2, 4, ...) and
// recompute the odd ones: torchtitan's "save every other mm".
PolicyFn save_every_other(const std::vector<std::string>& ops);
// MUST_RECOMPUTE every call under a scope matching one of the globs; PREFER_SAVE elsewhere
// (put it first in compose to carve scopes out of another policy).
PolicyFn recompute_scopes(const std::vector<std::string>& globs);
// MUST_SAVE every call under a matching scope; PREFER_RECOMPUTE elsewhere.
PolicyFn save_scopes(const std::vector<std::string>& globs);
// PREFER_SAVE everything (each region keeps all op outputs; no recomputation).
PolicyFn save_all();
// PREFER_RECOMPUTE everything (the same as vanilla checkpoint).
PolicyFn recompute_all();
// A view op's output aliases its input: caching it keeps the input's storage alive (policies
// that save "everything" usually want to skip views).
bool is_view_op(const OperatorHandle& op);

// Asks each policy in order; the first decisive answer (MUST_SAVE, MUST_RECOMPUTE,
// MUST_CPU_OFFLOAD) wins; if none is decisive, the last policy's answer (specific rules first, the
// default last).
PolicyFn compose(std::vector<PolicyFn> policies);

}  // namespace remat::policies
