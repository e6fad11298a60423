// Memory sizes as people write them on a command line, "40MiB" or "1.5GiB" (no PyTorch
// counterpart; torch takes bytes or a fraction): a budget for plan_checkpointing read from a flag,
// and bytes printed for people. Header-only; bench/memory_vs_recompute's --budget and
// examples/train_tiny_gpt's read it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/cli.h"

namespace remat {

// "40MiB", "1.5GiB", "800KB", "65536": bytes (KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000;
// a number without a unit is bytes, and a unit is never dropped: "40 MiB", "40M" or "40mib" are
// refused, not read as 40 bytes). Throws remat::UsageError (cli.h) naming `flag` and the text for
// anything else, for a size that is not finite, rounds to less than one byte ("0.4") or exceeds
// int64 bytes ("1e30").
inline int64_t parse_byte_size(const std::string& flag, const std::string& text) {
  const size_t used = decimal_prefix(text);
  const std::string unit = text.substr(used);
  static const std::vector<std::pair<std::string, double>> units = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024}};
  for (const auto& [name, scale] : units) {
    if (used == 0 || unit != name) continue;
    const double v = std::strtod(text.substr(0, used).c_str(), nullptr) * scale;
    if (!(v > 0.0)) throw UsageError(flag + ": the size must be positive, got " + cli_detail::quoted(text));
    if (v < 1.0) throw UsageError(flag + ": the size must be at least 1 byte, got " + cli_detail::quoted(text));
    // 2^63 is the first double past int64's range.
    if (!(v < 9223372036854775808.0)) {
      throw UsageError(flag + ": the size must be below 8 EiB (int64 bytes), got " + cli_detail::quoted(text));
    }
    return static_cast<int64_t>(v);
  }
  throw UsageError(flag + ": expected a size like 40MiB, 1.5GiB, 800KB or 65536, got " + cli_detail::quoted(text));
}

// Bytes for people: "60.0 MiB", "312.5 KiB", "1.50 GiB", "512 B".
inline std::string byte_size_text(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[48];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

}  // namespace remat
