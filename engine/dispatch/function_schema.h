// Mirrors ATen/core/function_schema.h and the schema parser (torch/csrc/jit/frontend/
// function_schema_parser.cpp), for the subset of types remat's ops use:
//   "aten::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)"
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/ivalue.h"

namespace remat {

enum class Tag { nondeterministic_seeded, inplace_view, view_copy, core, pointwise };
const char* toString(Tag t);

struct AliasInfo {
  std::string set;        // "a" in Tensor(a!) / Tensor(a)
  bool is_write = false;  // the "!": this argument is mutated
};

struct Argument {
  std::string name;
  std::string type;  // "Tensor", "Tensor?", "Tensor[]", "float", "int", "int[]", "int[]?",
                     // "bool", "str", "ScalarType", "ScalarType?", "Device", "Device?", "Generator?"
  std::optional<IValue> default_value;
  std::optional<AliasInfo> alias_info;
  bool kwarg_only = false;

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_tensor_list() const { return kind == Kind::TensorList; }
  bool is_optional() const { return !type.empty() && type.back() == '?'; }
  bool is_mutable() const { return alias_info && alias_info->is_write; }

  // Set by the parser from `type` (checked on every call; a string compare would be slow).
  enum class Kind : uint8_t { Tensor, TensorList, Other } kind = Kind::Other;
  // Set by the parser from `type`: bit t is set when an IValue with tag t is a valid value (what
  // check_and_normalize tests on every boxed call, without comparing type strings).
  uint32_t accepts = 0;
};

class FunctionSchema {
 public:
  FunctionSchema() = default;
  FunctionSchema(std::string name, std::vector<Argument> arguments, std::vector<Argument> returns)
      : name_(std::move(name)), arguments_(std::move(arguments)), returns_(std::move(returns)) {}

  const std::string& name() const { return name_; }  // "aten::add_" (with ".overload" if any)
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Argument>& returns() const { return returns_; }
  const std::vector<Tag>& tags() const { return tags_; }
  void set_tags(std::vector<Tag> tags) { tags_ = std::move(tags); }
  bool has_tag(Tag t) const;

  bool is_mutable() const;  // some argument is written (an in-place op)
  // A return aliases an input (a view op, or an in-place op returning self).
  bool is_aliasing_return(size_t return_index) const;
  // Returns whose alias set is shared with no argument: the op's fresh outputs.
  std::string str() const;

  // Fills defaults and checks arity and types of a boxed call; names the op on error.
  void check_and_normalize(Stack& args) const;

 private:
  std::string name_;
  std::vector<Argument> arguments_;
  std::vector<Argument> returns_;
  std::vector<Tag> tags_;
};

// Parses "ns::name(Type arg, ..., Type arg=default, *, Type kwarg) -> Ret" ; throws remat::Error
// naming the schema and the position on bad input.
FunctionSchema parse_schema(const std::string& schema);

std::ostream& operator<<(std::ostream& os, const FunctionSchema& s);

}  // namespace remat
