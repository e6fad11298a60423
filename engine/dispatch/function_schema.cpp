// Mirrors ATen/core/function_schema.cpp and torch/csrc/jit/frontend/function_schema_parser.cpp.
#include "engine/dispatch/function_schema.h"

#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace remat {

const char* toString(Tag t) {
  switch (t) {
    case Tag::nondeterministic_seeded: return "nondeterministic_seeded";
    case Tag::inplace_view: return "inplace_view";
    case Tag::view_copy: return "view_copy";
    case Tag::core: return "core";
    case Tag::pointwise: return "pointwise";
  }
  return "?";
}

bool FunctionSchema::has_tag(Tag t) const {
  for (Tag x : tags_)
    if (x == t) return true;
  return false;
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& a : arguments_)
    if (a.is_mutable()) return true;
  return false;
}

bool FunctionSchema::is_aliasing_return(size_t i) const {
  if (i >= returns_.size() || !returns_[i].alias_info) return false;
  for (const Argument& a : arguments_)
    if (a.alias_info && a.alias_info->set == returns_[i].alias_info->set) return true;
  return false;
}

namespace {

// A float default as PyTorch prints one: "0." for integral values, else the shortest decimal
// that parses back to the same double (so str() round-trips through parse_schema exactly).
std::string float_str(double d) {
  if (std::isfinite(d) && std::abs(d) < 1e10 && d == static_cast<double>(static_cast<int64_t>(d)))
    return (std::signbit(d) && d == 0 ? "-" : "") + std::to_string(static_cast<int64_t>(d)) + ".";
  std::ostringstream os;
  for (int precision = 6; precision <= 17; ++precision) {
    os.str("");
    os << std::setprecision(precision) << d;
    if (std::stod(os.str()) == d) break;
  }
  return os.str();
}

std::string arg_str(const Argument& a, bool with_name) {
  std::string t = a.type;
  if (a.alias_info) {
    // The annotation follows the base type: "Tensor(a!)", "Tensor(a!)?", "Tensor(a)[]".
    size_t base_end = t.find_first_of("[?");
    if (base_end == std::string::npos) base_end = t.size();
    t = t.substr(0, base_end) + "(" + a.alias_info->set + (a.alias_info->is_write ? "!" : "") + ")" +
        t.substr(base_end);
  }
  if (with_name && !a.name.empty()) t += " " + a.name;
  if (a.default_value) {
    const IValue& d = *a.default_value;
    std::string v = d.isBool() ? (d.toBool() ? "True" : "False") : d.isDouble() ? float_str(d.toDouble()) : d.str();
    t += "=" + v;
  }
  return t;
}

// The IValue tags a value of schema type t may have (Argument::accepts).
uint32_t accepted_tags(const std::string& t) {
  auto bit = [](IValue::Tag tag) { return uint32_t{1} << static_cast<int>(tag); };
  using Tag = IValue::Tag;
  uint32_t m = 0;
  if (!t.empty() && t.back() == '?') m |= bit(Tag::None);
  if (t == "Tensor") m |= bit(Tag::None);  // an undefined Tensor boxes as None
  if (t == "Tensor" || t == "Tensor?") m |= bit(Tag::Tensor);
  if (t == "Tensor[]") m |= bit(Tag::TensorList);
  if (t == "float" || t == "float?") m |= bit(Tag::Double) | bit(Tag::Int);
  if (t == "int" || t == "int?") m |= bit(Tag::Int);
  if (t == "int[]" || t == "int[]?") m |= bit(Tag::IntList);
  if (t == "bool") m |= bit(Tag::Bool);
  if (t == "str") m |= bit(Tag::String);
  if (t == "ScalarType" || t == "ScalarType?") m |= bit(Tag::ScalarType);
  if (t == "Device" || t == "Device?") m |= bit(Tag::Device);
  if (t == "Generator?") m |= bit(Tag::Generator);
  return m;
}

bool matches(const Argument& a, const IValue& v) { return (a.accepts >> static_cast<int>(v.tag())) & 1u; }

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  FunctionSchema parse() {
    std::string name = ident_with(":._");
    expect('(');
    std::vector<Argument> args;
    bool kwarg_only = false;
    skip_ws();
    if (peek() != ')') {
      while (true) {
        skip_ws();
        if (peek() == '*') {
          ++pos_;
          kwarg_only = true;
        } else {
          Argument a = argument(true);
          a.kwarg_only = kwarg_only;
          args.push_back(std::move(a));
        }
        skip_ws();
        if (peek() == ',') { ++pos_; continue; }
        break;
      }
    }
    expect(')');
    skip_ws();
    expect('-');
    expect('>');
    skip_ws();
    std::vector<Argument> rets;
    if (peek() == '(') {
      ++pos_;
      skip_ws();
      if (peek() != ')') {
        while (true) {
          rets.push_back(argument(false));
          skip_ws();
          if (peek() == ',') { ++pos_; continue; }
          break;
        }
      }
      expect(')');
    } else {
      rets.push_back(argument(false));
    }
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected trailing characters");
    return FunctionSchema(name, std::move(args), std::move(rets));
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw Error(detail::str("parse_schema: ", what, " at position ", pos_, " in \"", s_, "\""));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string ident_with(const char* extra) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                std::string(extra).find(s_[pos_]) != std::string::npos))
      ++pos_;
    if (start == pos_) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }

  Argument argument(bool named) {
    Argument a;
    std::string base = ident_with("_");
    static const char* kKnown[] = {"Tensor", "float", "int", "bool", "str", "ScalarType", "Device", "Generator"};
    bool known = false;
    for (const char* k : kKnown) known |= base == k;
    if (!known) fail("unknown type '" + base + "'");
    if (peek() == '(') {  // alias annotation
      ++pos_;
      AliasInfo info;
      info.set = ident_with("_");
      if (peek() == '!') { info.is_write = true; ++pos_; }
      expect(')');
      a.alias_info = info;
    }
    if (peek() == '[') {
      ++pos_;
      expect(']');
      base += "[]";
    }
    if (peek() == '?') {
      ++pos_;
      base += "?";
    }
    a.type = base;
    static const char* kTypes[] = {"Tensor", "Tensor?", "Tensor[]", "float", "int", "int[]", "int[]?",
                                   "bool", "str", "ScalarType", "ScalarType?", "Device", "Device?",
                                   "Generator?", "float?", "int?"};
    bool ok = false;
    for (const char* t : kTypes) ok |= a.type == t;
    if (!ok) fail("unsupported type '" + a.type + "'");
    a.kind = (a.type == "Tensor" || a.type == "Tensor?") ? Argument::Kind::Tensor
             : a.type == "Tensor[]"                      ? Argument::Kind::TensorList
                                                         : Argument::Kind::Other;
    a.accepts = accepted_tags(a.type);
    skip_ws();
    if (named || (peek() != ',' && peek() != ')' && peek() != '\0')) {
      if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') a.name = ident_with("_");
    }
    skip_ws();
    if (peek() == '=') {
      ++pos_;
      a.default_value = default_value(a.type);
    }
    return a;
  }

  IValue default_value(const std::string& type) {
    skip_ws();
    size_t start = pos_;
    if (peek() == '"' || peek() == '\'') {
      char q = s_[pos_++];
      while (pos_ < s_.size() && s_[pos_] != q) ++pos_;
      if (pos_ >= s_.size()) fail("unterminated string default");
      std::string v = s_.substr(start + 1, pos_ - start - 1);
      ++pos_;
      return IValue(v);
    }
    if (peek() == '[') {
      ++pos_;
      Shape l;
      skip_ws();
      while (peek() != ']') {
        l.push_back(std::stoll(ident_with("-")));
        skip_ws();
        if (peek() == ',') ++pos_;
        skip_ws();
      }
      ++pos_;
      return IValue(l);
    }
    std::string tok = ident_with("-+.e");
    if (tok == "None") return IValue();
    if (tok == "True") return IValue(true);
    if (tok == "False") return IValue(false);
    try {
      if (type == "float" || type == "float?") return IValue(std::stod(tok));
      if (type == "int" || type == "int?") return IValue(static_cast<int64_t>(std::stoll(tok)));
    } catch (const std::exception&) {
    }
    fail("bad default value '" + tok + "' for type " + type);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::string FunctionSchema::str() const {
  std::string s = name_ + "(";
  bool kw = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (i) s += ", ";
    if (arguments_[i].kwarg_only && !kw) { s += "*, "; kw = true; }
    s += arg_str(arguments_[i], true);
  }
  s += ") -> ";
  if (returns_.size() == 1) return s + arg_str(returns_[0], true);
  s += "(";
  for (size_t i = 0; i < returns_.size(); ++i) s += (i ? ", " : "") + arg_str(returns_[i], true);
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const FunctionSchema& s) { return os << s.str(); }

void FunctionSchema::check_and_normalize(Stack& args) const {
  REMAT_CHECK(args.size() <= arguments_.size(), name_, "() takes at most ", arguments_.size(),
              " arguments but ", args.size(), " were given. Schema: ", str());
  for (size_t i = args.size(); i < arguments_.size(); ++i) {
    REMAT_CHECK(arguments_[i].default_value.has_value(), name_, "() is missing value for argument '",
                arguments_[i].name, "'. Schema: ", str());
    args.push_back(*arguments_[i].default_value);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    REMAT_CHECK(matches(arguments_[i], args[i]), name_, "(): expected argument '", arguments_[i].name,
                "' (position ", i, ") to be of type ", arguments_[i].type, " but got ",
                args[i].tagKind(), ". Schema: ", str());
  }
}

FunctionSchema parse_schema(const std::string& schema) { return Parser(schema).parse(); }

}  // namespace remat
