// The report's tables as text (the terminal) or HTML, and the cells they are made of (no PyTorch
// counterpart; see internal.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

namespace render_internal {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const StrategyResult* find(const std::vector<StrategyResult>& rs, const std::string& name) {
  for (const auto& r : rs)
    if (r.name == name) return &r;
  return nullptr;
}

bool any_measured(const std::vector<StrategyResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const StrategyResult& r) { return r.measured.known; });
}

int64_t category(const std::map<MemoryCategory, int64_t>& m, MemoryCategory c) {
  auto it = m.find(c);
  return it == m.end() ? 0 : it->second;
}

bool any_planned(const std::vector<StrategyResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const StrategyResult& r) { return r.planned(); });
}

std::string fits_text(const StrategyResult& r) { return r.planned() ? (r.fits() ? "yes" : "NO") : "-"; }

std::string mib(int64_t bytes, const char* f) { return fmt(f, static_cast<double>(bytes) / kMiB); }

// The sweep point planned at exactly `budget`, if any.
const StrategyResult* planned_at(const std::vector<StrategyResult>& sweep, int64_t budget) {
  for (const auto& p : sweep)
    if (p.budget_bytes == budget) return &p;
  return nullptr;
}

}  // namespace render_internal

std::string ratio_text(int64_t measured, int64_t predicted) {
  if (predicted <= 0) return "-";
  if (measured == predicted) return "1.000";
  std::string r = fmt("%.3f", static_cast<double>(measured) / static_cast<double>(predicted));
  return r == "1.000" ? "~1.000" : r;
}

std::string table_text(const Table& t) {
  std::vector<size_t> width(t.header.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  widen(t.header);
  for (const auto& row : t.rows) widen(row);
  std::ostringstream s;
  auto put = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(width[i] - cell.size(), ' ');
      if (i == 0)
        s << cell << pad;  // names left, figures right
      else
        s << "  " << pad << cell;
    }
    s << "\n";
  };
  put(t.header);
  for (const auto& row : t.rows) put(row);
  return s.str();
}

std::string table_html(const Table& t) {
  std::ostringstream s;
  s << "<table>\n<thead><tr>";
  for (const auto& h : t.header) s << "<th>" << escape_xml(h) << "</th>";
  s << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    s << "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      std::string cls;
      if (i < t.header.size() && t.header[i] == "ratio" && row[i] != "-")
        cls = row[i] == "1.000" ? " class='ok'" : " class='off'";
      s << "<td" << cls << ">" << escape_xml(row[i]) << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</tbody>\n</table>\n";
  // The notes are wrapped for a terminal: one paragraph here.
  std::string notes;
  for (const auto& n : t.notes) notes += (notes.empty() ? "" : " ") + n;
  if (!notes.empty()) s << "<p class='note'>" << escape_xml(notes) << "</p>\n";
  return s.str();
}

}  // namespace remat::bench
