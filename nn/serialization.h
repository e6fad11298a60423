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
//
// Files from the internet are untrusted; their limits (each refused with one remat::Error):
//   header      at most 100,000,000 bytes (safetensors' MAX_HEADER_SIZE)
//   entries     at most 1,000,000 names in the header (tensors and __metadata__)
//   nesting     at most 64 levels of arrays and objects (a valid header needs 3), checked in one
//               pass over the bytes before the JSON is parsed
//   messages    quote at most 100 characters of a name or value from the file
// Loading takes time linear in the number of entries (about 2 s for 200,000 zero-size tensors on
// one core of an AMD EPYC, Zen 4; a 100,000-deep header is refused in well under a millisecond).
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
