// The planner's multiple-choice knapsack (see knapsack_frontier.h; no PyTorch counterpart).
#include "checkpoint/knapsack_frontier.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace remat::planner_detail {

std::vector<std::vector<bool>> knapsack_frontier(const Data& data, const std::vector<bool>& keepable) {
  struct Choice {  // one region's keep-set: the items in `mask` (its calls listed only for the front)
    int64_t bytes = 0;
    double cost = 0;
    uint32_t mask = 0;
  };
  struct Point {  // a front point: its region's choice and the previous front's point it extends
    int64_t bytes = 0;
    double cost = 0;
    size_t choice = 0, previous = 0;
  };
  auto pareto = [](auto v) {  // bytes rising, cost strictly falling
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.bytes != b.bytes ? a.bytes < b.bytes : a.cost < b.cost;
    });
    decltype(v) front;
    for (auto& o : v)
      if (front.empty() || o.cost < front.back().cost) front.push_back(std::move(o));
    return front;
  };
  std::map<std::vector<size_t>, int> instances;  // a region's calls (forward order) -> how many regions run them
  for (const Data::Region& r : data.regions) ++instances[r.calls];
  std::vector<int> group_of(data.calls.size(), -1);
  int group = 0;
  for (const auto& [calls, count] : instances) {
    for (size_t c : calls) {
      if (group_of[c] >= 0 && group_of[c] != group) return {};  // regions that share only some calls
      group_of[c] = group;
    }
    ++group;
  }
  constexpr size_t kMaxItems = 16;
  std::vector<std::vector<Choice>> menus;   // per region group
  std::vector<std::vector<std::vector<size_t>>> group_items;  // per region group: its items' calls
  std::vector<std::vector<Point>> fronts = {{Point{}}};  // fronts[g]: over the first g groups
  for (const auto& [calls, count] : instances) {
    // Items: the region's keepable calls one by one, or (too many of them) all calls of one op.
    std::vector<std::vector<size_t>> items;
    std::vector<size_t> own;
    for (size_t c : calls)
      if (keepable[c] && std::find(own.begin(), own.end(), c) == own.end()) own.push_back(c);
    if (own.size() <= kMaxItems) {
      for (size_t c : own) items.push_back({c});
    } else {
      std::map<std::string, std::vector<size_t>> by_op;
      for (size_t c : own) by_op[data.calls[c].op].push_back(c);
      if (by_op.size() > kMaxItems) return {};
      for (auto& [op, cs] : by_op) items.push_back(cs);
    }
    std::vector<Choice> menu;
    std::vector<bool> kept(data.calls.size(), false);
    for (uint32_t mask = 0; mask < (1u << items.size()); ++mask) {
      Choice o;
      for (size_t k = 0; k < items.size(); ++k)
        for (size_t c : items[k]) kept[c] = (mask >> k) & 1u;
      size_t last = calls.size();
      for (size_t p = 0; p < calls.size(); ++p) {
        const Data::Call& call = data.calls[calls[p]];
        if (call.needed && call.bytes > 0 && !kept[calls[p]]) last = p;
      }
      for (size_t p = 0; last < calls.size() && p <= last; ++p)
        if (!kept[calls[p]]) o.cost += data.calls[calls[p]].cost * count;
      for (size_t k = 0; k < items.size(); ++k)
        if ((mask >> k) & 1u)
          for (size_t c : items[k]) o.bytes += data.calls[c].bytes;
      o.mask = mask;
      menu.push_back(o);
    }
    menus.push_back(pareto(std::move(menu)));
    group_items.push_back(std::move(items));
    const std::vector<Point>& front = fronts.back();
    std::vector<Point> merged;
    merged.reserve(front.size() * menus.back().size());
    for (size_t i = 0; i < front.size(); ++i)
      for (size_t j = 0; j < menus.back().size(); ++j)
        merged.push_back({front[i].bytes + menus.back()[j].bytes, front[i].cost + menus.back()[j].cost, j, i});
    std::vector<Point> next = pareto(std::move(merged));
    constexpr size_t kMaxFront = 2048;  // thin evenly, both ends kept
    if (next.size() > kMaxFront) {
      std::vector<Point> thin;
      for (size_t i = 0; i < kMaxFront; ++i) thin.push_back(next[i * (next.size() - 1) / (kMaxFront - 1)]);
      next = std::move(thin);
    }
    fronts.push_back(std::move(next));
  }
  std::vector<std::vector<bool>> sets;
  for (size_t i = 0; i < fronts.back().size(); ++i) {
    std::vector<bool> s(data.calls.size(), false);
    for (size_t g = menus.size(), at = i; g > 0; --g) {  // back through the fronts
      const Point& p = fronts[g][at];
      const std::vector<std::vector<size_t>>& items = group_items[g - 1];
      for (size_t k = 0; k < items.size(); ++k)
        if ((menus[g - 1][p.choice].mask >> k) & 1u)
          for (size_t c : items[k]) s[c] = true;
      at = p.previous;
    }
    sets.push_back(std::move(s));
  }
  return sets;
}

}  // namespace remat::planner_detail
