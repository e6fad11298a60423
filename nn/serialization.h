// Mirrors safetensors' torch API (safetensors/torch.py: save_file, load_file, save_model,
// load_model) and torch.nn.Module.load_state_dict(strict=True): tensors in the safetensors
// format, and a module's parameters and buffers saved and loaded by name.
//
// The format (https://github.com/huggingface/safetensors):
//   8 bytes      N, the header's length, unsigned little-endian
//   N bytes      a JSON object: {"__metadata__": {"k": "v"}?,
//                                "<name>": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, ...}
//                (remat pads it with spaces so the data starts at a multiple of 8, as safetensors does)
//   the rest     the tensors' bytes, little-endian, row-major, one after another with no gaps;
//                data_offsets are [begin, end) into this part
// dtypes: F32, F64, BF16, F16, I64, BOOL (remat's dtypes; any other is refused).
//
// Reading validates the whole file before returning anything: a bad header length, invalid
// JSON, a malformed entry, an unknown dtype, a shape whose size does not match its byte range,
// offsets that leave gaps, overlap or run past the end, or trailing bytes all throw remat::Error
// naming the problem (and the tensor).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "nn/module.h"

namespace remat::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

// The file's bytes for `tensors` (copied to the CPU, made contiguous), laid out in the given order.
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});
// The tensors of a safetensors byte string, in the order of their data; `metadata`, when given,
// receives "__metadata__".
NamedTensors deserialize_safetensors(const std::string& bytes, Metadata* metadata = nullptr);

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
NamedTensors load_safetensors(const std::string& path, Metadata* metadata = nullptr);

// A module's state_dict() (parameters, then buffers; a tied parameter once, under its first
// name) to a safetensors file.
void save(const Module& module, const std::string& path);
// Loads a file written by save() into the module, strictly: the file must hold exactly the
// module's state_dict() names, each with the same shape (dtypes convert, as load_state_dict
// does). Everything is checked before the first value is copied, so on error the module is
// unchanged.
void load(Module& module, const std::string& path);
// The same from named tensors (load_state_dict(strict=True)).
void load_state_dict(Module& module, const NamedTensors& state);

}  // namespace remat::nn
