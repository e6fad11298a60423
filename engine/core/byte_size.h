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

#include "engine/core/error.h"

namespace remat {

// "40MiB", "1.5GiB", "800KB", "65536": bytes (KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000).
// Throws remat::Error naming `flag` and the text for anything else, or for a size of 0 or less.
inline int64_t parse_byte_size(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  static const std::vector<std::pair<std::string, double>> units = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024}};
  for (const auto& [name, scale] : units) {
    if (used > 0 && unit == name) {
      REMAT_CHECK(v > 0, flag, ": the size must be positive, got '", text, "'");
      return static_cast<int64_t>(v * scale);
    }
  }
  throw Error(flag + ": expected a size like 40MiB, 1.5GiB, 800KB or 65536, got '" + text + "'");
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
