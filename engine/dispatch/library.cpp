// Mirrors torch/csrc/utils/library.cpp.
#include "engine/dispatch/library.h"

namespace remat {

std::string Library::qualify(const std::string& name) const {
  return name.find("::") == std::string::npos ? ns_ + "::" + name : name;
}

Library& Library::def(const std::string& schema, std::vector<Tag> tags) {
  std::string qualified = schema.find("::") != std::string::npos &&
                                  schema.find("::") < schema.find('(')
                              ? schema
                              : ns_ + "::" + schema;
  FunctionSchema s = parse_schema(qualified);
  s.set_tags(std::move(tags));
  Dispatcher::singleton().registerDef(std::move(s));
  return *this;
}

Library& Library::impl(const std::string& name, KernelFunction kernel) {
  REMAT_CHECK(key_.has_value(), "Library::impl(", name, "): this library has no dispatch key; pass one");
  return impl(name, *key_, std::move(kernel));
}

Library& Library::impl(const std::string& name, DispatchKey key, KernelFunction kernel) {
  Dispatcher::singleton().registerImpl(qualify(name), key, std::move(kernel));
  return *this;
}

Library& Library::fallback(KernelFunction kernel) {
  REMAT_CHECK(key_.has_value(), "Library::fallback: this library has no dispatch key");
  Dispatcher::singleton().registerFallback(*key_, std::move(kernel));
  return *this;
}

}  // namespace remat
