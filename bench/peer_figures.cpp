// A peer's figures for bench/dispatch_overhead, from its output (see peer_figures.h).
#include "bench/peer_figures.h"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "remat.h"

namespace remat::bench {

double PeerFigures::get(const std::string& key) const {
  auto it = ns.find(key);
  return it == ns.end() ? -1.0 : it->second;
}

PeerFigures parse_peer_figures(const std::string& command, const std::string& output,
                               const std::map<std::string, std::string>& required) {
  PeerFigures f;
  f.command = command;
  f.version = "unknown";
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream words(line);
    std::string key, value, extra;
    words >> key >> value;
    REMAT_CHECK(!value.empty() && !(words >> extra), "dispatch_overhead --libtorch ", command, ": line '", line,
                "' is not one 'key value' pair");
    if (key == "libtorch_version") {
      f.version = value;
      continue;
    }
    // Whole-string decimal number (engine/core/cli.h): "12x", "nan" or "inf" would be a broken
    // peer, not a figure.
    const bool decimal = decimal_prefix(value) == value.size();
    const double v = decimal ? std::strtod(value.c_str(), nullptr) : -1.0;
    REMAT_CHECK(decimal && std::isfinite(v) && v >= 0.0, "dispatch_overhead --libtorch ", command, ": the value of ",
                key, " is ", cli_detail::quoted(value), ", not a number of nanoseconds");
    f.ns[key] = v;
  }
  for (const auto& kv : required)
    REMAT_CHECK(f.ns.count(kv.first) != 0, "dispatch_overhead --libtorch ", command, " printed no ", kv.first,
                " line (", kv.second, "); it printed:\n", output);
  return f;
}

PeerFigures run_peer(const std::string& command, const std::map<std::string, std::string>& required) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REMAT_CHECK(pipe != nullptr, "dispatch_overhead --libtorch ", command, ": could not start it");
  std::string output;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, got);
  int status = ::pclose(pipe);
  int code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  REMAT_CHECK(code == 0, "dispatch_overhead --libtorch ", command, ": it exited with status ", code,
              " (build it with tools/dispatch_libtorch.sh --build-only)");
  return parse_peer_figures(command, output, required);
}

}  // namespace remat::bench
