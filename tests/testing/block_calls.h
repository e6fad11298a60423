// no PyTorch counterpart: a block's op calls as a plan file names them, recorded in remat and read
// from the PyTorch twin's recordings (tests/nn/data/*_block_calls.json, written by
// tools/gpt_block_calls.py and tools/llama_block_calls.py with python/remat_plan's record_calls).
#pragma once

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/plan_file.h"
#include "remat.h"

namespace remat::testing {

// A file the test reads: under Bazel from its runfiles, else from the working directory (CMake's).
inline std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  return dir ? std::string(dir) + "/remat/" + path : path;
}

// The op calls a SAC policy is asked about (all but aten::detach), as a plan file names them: the op
// without its overload (PyTorch's OpOverload._schema.name), then each output's dtype and shape:
// "aten::mm f32 32 64;".
struct CallRecorder : DispatchMode {
  std::vector<std::string> calls;
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::vector<IValue> out = op.call(args);
    if (op.name() == "aten::detach") return out;
    std::string text = op.name().substr(0, op.name().find('.'));
    auto add = [&](const Tensor& t) {
      text += std::string(" ") + plan_dtype_name(t.dtype());
      for (int64_t d : t.sizes()) text += " " + std::to_string(d);
      text += ";";
    };
    for (const IValue& v : out) {
      if (v.isTensor()) add(v.toTensor());
      else if (v.isTensorList())
        for (const Tensor& t : v.toTensorListRef()) add(t);
    }
    calls.push_back(text);
    return out;
  }
};

// The calls of one dtype's list of a *_block_calls.json document, in CallRecorder's form.
inline std::vector<std::string> expected_calls(const nlohmann::json& calls) {
  std::vector<std::string> expected;
  for (const auto& c : calls) {
    std::string text = c["op"].get<std::string>();
    for (const auto& o : c["outputs"]) {
      text += " " + o["dtype"].get<std::string>();
      for (const auto& d : o["shape"]) text += " " + std::to_string(d.get<int64_t>());
      text += ";";
    }
    expected.push_back(text);
  }
  return expected;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream file(runfile(path));
  if (!file.good()) throw Error("cannot read " + runfile(path));
  return nlohmann::json::parse(file);
}

}  // namespace remat::testing
