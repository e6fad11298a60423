// Command-line values and the `main` around them (no PyTorch counterpart; argparse's type= and
// choices= checks, for C++): integers and floats read strictly, each refusal one line naming the
// flag, the value and what is allowed; and run_main, which turns anything a program throws into
// one `error: ...` line and its exit status (2: bad usage, 1: a failed run). Header-only and free
// of the rest of remat but for error.h: the benchmarks, the examples and tools/ all use it
// (sizes such as "40MiB": byte_size.h).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>

#include "engine/core/error.h"

namespace remat {

// Bad usage: a flag's value out of range, an unknown flag, a missing path. run_main exits 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

namespace cli_detail {
// The value as the message quotes it: at most `max` characters (60 for a flag's value, more for
// a path), so that a huge argument still gives one short line.
inline std::string quoted(const std::string& text, size_t max = 60) {
  if (text.size() <= max) return "'" + text + "'";
  return "'" + text.substr(0, max - 3) + "...' (" + std::to_string(text.size()) + " characters)";
}
// A path as messages quote it.
inline std::string quoted_path(const std::string& path) { return quoted(path, 1000); }
}  // namespace cli_detail

// An integer in [min, max], written in decimal with an optional '-' and nothing else (no space,
// no '+', no hex, no fraction): "--threads: expected an integer from 1 to 4096, got '99999999999'".
// A value past int64 is refused like any other value out of range, never wrapped or saturated.
inline int64_t parse_int(const std::string& flag, const std::string& text, int64_t min,
                         int64_t max = std::numeric_limits<int64_t>::max()) {
  auto refuse = [&] {
    const std::string range = max == std::numeric_limits<int64_t>::max()
                                  ? "an integer >= " + std::to_string(min)
                                  : "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    return UsageError(flag + ": expected " + range + ", got " + cli_detail::quoted(text));
  };
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  if (i == text.size()) throw refuse();
  int64_t v = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') throw refuse();
    const int64_t digit = c - '0';
    if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_sub_overflow(v, digit, &v)) throw refuse();
  }
  // Accumulated as a negative number, which reaches int64's minimum.
  if (!negative && __builtin_mul_overflow(v, int64_t{-1}, &v)) throw refuse();
  if (v < min || v > max) throw refuse();
  return v;
}

// The length of the decimal number at the start of `text` ("12", "-1.5", "3e-4", ".5"), or 0 if
// there is none: digits, an optional fraction and exponent, and nothing strtod reads beyond that
// (no "inf", "nan", hex or leading space).
inline size_t decimal_prefix(const std::string& text) {
  size_t i = 0, digits = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ++digits;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ++digits;
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1, exp_digits = 0;
    if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
    for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j) ++exp_digits;
    if (exp_digits > 0) i = j;
  }
  return i;
}

// A finite number in [min, max] (both inclusive), the whole text a decimal number:
// "--lr: expected a finite number from 0 to 10, got 'abc'". `allowed` replaces the range in the
// message when the range alone does not say it (e.g. "a number > 0 and <= 10").
inline double parse_float(const std::string& flag, const std::string& text, double min, double max,
                          const std::string& allowed = "") {
  auto refuse = [&] {
    char range[96];
    std::snprintf(range, sizeof range, "a finite number from %g to %g", min, max);
    return UsageError(flag + ": expected " + (allowed.empty() ? std::string(range) : allowed) + ", got " +
                      cli_detail::quoted(text));
  };
  const size_t used = decimal_prefix(text);
  if (used == 0 || used != text.size()) throw refuse();
  errno = 0;
  const double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v) || errno == ERANGE || v < min || v > max) throw refuse();
  return v;
}

// What a program's main returns: body()'s status (1 if its output could not be written to
// stdout, e.g. a full disk), or, for what it throws, one line on stderr,
// "error: ...", and 2 for a UsageError, 1 for anything else. A std::bad_alloc says "out of
// memory"; remat's allocators throw an Error naming the bytes they needed instead.
template <class Body>
int run_main(Body&& body) {
  auto line = [](const std::string& what) {
    std::string one = what;
    for (char& c : one)
      if (c == '\n' || c == '\r') c = ' ';
    std::fprintf(stderr, "error: %s\n", one.c_str());
  };
  try {
    const int status = body();
    // What it printed must have reached stdout: a full disk (> /dev/full) is a failed run.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      line(std::string("cannot write standard output: ") + std::strerror(errno));
      return 1;
    }
    return status;
  } catch (const UsageError& e) {
    line(e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    line("out of memory (std::bad_alloc: a request larger than the memory available)");
  } catch (const std::exception& e) {
    line(e.what());
  } catch (...) {
    line("unknown exception");
  }
  return 1;
}

}  // namespace remat
