// Mirrors ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h and boxing/impl/boxing.h:
// converting C++ arguments and returns to and from IValues.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/core/ivalue.h"
#include "engine/dispatch/stack_buffers.h"

namespace remat::detail {

// ---- C++ value -> IValue ----
inline IValue to_ivalue(const Tensor& t) { return IValue(t); }
inline IValue to_ivalue(double d) { return IValue(d); }
inline IValue to_ivalue(int64_t i) { return IValue(i); }
inline IValue to_ivalue(bool b) { return IValue(b); }
inline IValue to_ivalue(const std::string& s) { return IValue(s); }
inline IValue to_ivalue(const Shape& l) { return IValue(l); }
inline IValue to_ivalue(const std::vector<Tensor>& l) { return IValue(l); }
inline IValue to_ivalue(ScalarType t) { return IValue(t); }
inline IValue to_ivalue(Device d) { return IValue(d); }
inline IValue to_ivalue(Generator* g) { return IValue(g); }
template <class T>
IValue to_ivalue(const std::optional<T>& o) {
  return o ? to_ivalue(*o) : IValue();
}

// The same, holding a Tensor argument without a reference (IValue::unsafe_borrow): for the
// dispatcher's stacks of a call's own arguments, which never outlive them.
inline IValue borrow_ivalue(const Tensor& t) { return IValue::unsafe_borrow(t); }
template <class T>
IValue borrow_ivalue(const T& v) {
  return to_ivalue(v);
}

// ---- IValue -> C++ value ----
template <class T> struct FromIValue;
template <> struct FromIValue<Tensor> {
  static Tensor get(IValue& v) { return v.isNone() ? Tensor() : std::move(v.toTensor()); }
};
template <> struct FromIValue<double> { static double get(IValue& v) { return v.toDouble(); } };
template <> struct FromIValue<int64_t> { static int64_t get(IValue& v) { return v.toInt(); } };
template <> struct FromIValue<bool> { static bool get(IValue& v) { return v.toBool(); } };
template <> struct FromIValue<std::string> { static std::string get(IValue& v) { return v.toStringRef(); } };
template <> struct FromIValue<Shape> { static Shape get(IValue& v) { return v.toIntVector(); } };
template <> struct FromIValue<std::vector<Tensor>> {
  static std::vector<Tensor> get(IValue& v) { return v.toTensorVector(); }
};
template <> struct FromIValue<ScalarType> { static ScalarType get(IValue& v) { return v.toScalarType(); } };
template <> struct FromIValue<Device> { static Device get(IValue& v) { return v.toDevice(); } };
template <> struct FromIValue<Generator*> { static Generator* get(IValue& v) { return v.toGenerator(); } };
template <class T> struct FromIValue<std::optional<T>> {
  static std::optional<T> get(IValue& v) {
    if (v.isNone()) return std::nullopt;
    return FromIValue<T>::get(v);
  }
};

template <class T>
using decay_t = std::remove_cv_t<std::remove_reference_t<T>>;

// ---- returns: push onto / pop from the stack ----
template <class R> struct ReturnBoxing;
template <> struct ReturnBoxing<Tensor> {
  static void push(Stack& s, Tensor&& r) { s.emplace_back(std::move(r)); }
  static Tensor pop(Stack& s) {
    REMAT_CHECK(s.size() == 1, "boxed kernel returned ", s.size(), " values where 1 Tensor was expected");
    return FromIValue<Tensor>::get(s[0]);
  }
};
template <> struct ReturnBoxing<std::vector<Tensor>> {
  static void push(Stack& s, std::vector<Tensor>&& r) { s.emplace_back(std::move(r)); }
  static std::vector<Tensor> pop(Stack& s) {
    REMAT_CHECK(s.size() == 1, "boxed kernel returned ", s.size(), " values where 1 Tensor[] was expected");
    return s[0].toTensorVector();
  }
};
template <class... Ts> struct ReturnBoxing<std::tuple<Ts...>> {
  static void push(Stack& s, std::tuple<Ts...>&& r) {
    std::apply([&](auto&&... e) { (s.emplace_back(std::move(e)), ...); }, std::move(r));
  }
  static std::tuple<Ts...> pop(Stack& s) {
    REMAT_CHECK(s.size() == sizeof...(Ts), "boxed kernel returned ", s.size(), " values where ",
                sizeof...(Ts), " were expected");
    return pop_impl(s, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> pop_impl(Stack& s, std::index_sequence<I...>) {
    return std::tuple<Ts...>(FromIValue<Ts>::get(s[I])...);
  }
};

// Calls f with the last sizeof...(Args) stack entries converted to Args.
template <class... Args, class F, size_t... I>
decltype(auto) call_with_stack_args(F&& f, Stack& s, size_t first, std::index_sequence<I...>) {
  std::tuple<decay_t<Args>...> converted(FromIValue<decay_t<Args>>::get(s[first + I])...);
  return f(std::get<I>(converted)...);
}

}  // namespace remat::detail
