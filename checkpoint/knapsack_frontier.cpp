// The planner's multiple-choice knapsack (see knapsack_frontier.h; no PyTorch counterpart).
#include "checkpoint/knapsack_frontier.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace remat::planner_detail {

namespace {

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

template <class T>
std::vector<T> pareto(std::vector<T> v) {  // bytes rising, cost strictly falling
  std::sort(v.begin(), v.end(),
            [](const T& a, const T& b) { return a.bytes != b.bytes ? a.bytes < b.bytes : a.cost < b.cost; });
  std::vector<T> front;
  for (T& o : v)
    if (front.empty() || o.cost < front.back().cost) front.push_back(std::move(o));
  return front;
}

// The front of a region's keep-sets of `items` (each kept whole or not), its calls run `count` times.
std::vector<Choice> menu_of(const Data& data, const std::vector<size_t>& calls, int count,
                            const std::vector<std::vector<size_t>>& items) {
  // Per position: its item (-1: never kept). A rerun goes up to the last needed output not kept:
  // `always` (no item's), or the last of an item not kept. Only calls that cost anything are summed.
  std::vector<int> item_at(calls.size(), -1);
  for (size_t p = 0; p < calls.size(); ++p)
    for (size_t k = 0; k < items.size() && item_at[p] < 0; ++k)
      if (std::find(items[k].begin(), items[k].end(), calls[p]) != items[k].end()) item_at[p] = static_cast<int>(k);
  int64_t always = -1;
  std::vector<int64_t> last_needed(items.size(), -1), item_bytes(items.size(), 0);
  std::vector<size_t> costly;
  for (size_t p = 0; p < calls.size(); ++p) {
    const Data::Call& call = data.calls[calls[p]];
    if (call.needed && call.bytes > 0)
      (item_at[p] < 0 ? always : last_needed[static_cast<size_t>(item_at[p])]) = static_cast<int64_t>(p);
    if (call.cost != 0) costly.push_back(p);
  }
  for (size_t k = 0; k < items.size(); ++k)
    for (size_t c : items[k]) item_bytes[k] += data.calls[c].bytes;
  std::vector<Choice> menu;
  menu.reserve(size_t{1} << items.size());
  for (uint32_t mask = 0; mask < (1u << items.size()); ++mask) {
    Choice o;
    int64_t last = always;
    for (size_t k = 0; k < items.size(); ++k) {
      if ((mask >> k) & 1u) o.bytes += item_bytes[k];
      else last = std::max(last, last_needed[k]);
    }
    for (size_t p : costly) {
      if (static_cast<int64_t>(p) > last) break;
      if (item_at[p] < 0 || !((mask >> item_at[p]) & 1u)) o.cost += data.calls[calls[p]].cost * count;
    }
    o.mask = mask;
    menu.push_back(o);
  }
  return pareto(std::move(menu));
}

// The call whose output call c copies (Call::copy_of), followed back to one that is no copy: c
// itself if c is none.
size_t copied_root(const Data& data, size_t c) {
  while (data.calls[c].copy_of >= 0) c = static_cast<size_t>(data.calls[c].copy_of);
  return c;
}

// 2^18 keep-sets per region at most (regions alike enumerated once).
constexpr size_t kMaxItems = 18;

// A region's items: its keepable calls (`own`, forward order) one by one; or (too many of them) the
// copies of one call's output (Call::copy_of, followed back: copies of copies too) as one item, the
// rest one by one: a GPT block's 20 keepable calls, 3 of them matmul's copies of q, k^T and v, make
// 18 items, where by op its 4 addmm (the qkv projection's 126 GFLOP at GPT-2 XL's size among them)
// would be kept all or none; or (still too many) all calls of one op; or (too many ops) none.
std::vector<std::vector<size_t>> items_of(const Data& data, const std::vector<size_t>& own) {
  std::vector<std::vector<size_t>> items;
  if (own.size() <= kMaxItems) {
    for (size_t c : own) items.push_back({c});
    return items;
  }
  std::map<size_t, size_t> copies_item;  // the call copied -> the item of its copies
  for (size_t c : own) {
    const size_t root = copied_root(data, c);
    if (root == c) {
      items.push_back({c});
    } else {
      auto [it, fresh] = copies_item.emplace(root, items.size());
      if (fresh) items.emplace_back();
      items[it->second].push_back(c);
    }
  }
  if (items.size() <= kMaxItems) return items;
  std::map<std::string, std::vector<size_t>> by_op;
  for (size_t c : own) by_op[data.calls[c].op].push_back(c);
  items.clear();
  if (by_op.size() > kMaxItems) return items;
  for (auto& [op, cs] : by_op) items.push_back(cs);
  return items;
}

}  // namespace

std::vector<std::vector<bool>> knapsack_frontier(const Data& data, const std::vector<bool>& keepable) {
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
  std::vector<std::vector<Choice>> menus;   // per region group
  std::vector<std::vector<std::vector<size_t>>> group_items;  // per region group: its items' calls
  std::vector<std::vector<Point>> fronts = {{Point{}}};  // fronts[g]: over the first g groups
  // A menu depends on the calls' figures in order and which item each is in, not on their names:
  // regions alike but for their scope (a model's layers) share one, enumerated once.
  std::map<std::vector<std::tuple<double, int64_t, bool, int>>, std::vector<Choice>> menus_by_shape;
  for (const auto& [calls, count] : instances) {
    std::vector<size_t> own;
    for (size_t c : calls)
      if (keepable[c] && std::find(own.begin(), own.end(), c) == own.end()) own.push_back(c);
    std::vector<std::vector<size_t>> items = items_of(data, own);
    if (items.empty() && !own.empty()) return {};
    std::vector<std::tuple<double, int64_t, bool, int>> shape;
    for (size_t c : calls) {
      int item = -1;
      for (size_t k = 0; k < items.size() && item < 0; ++k)
        if (std::find(items[k].begin(), items[k].end(), c) != items[k].end()) item = static_cast<int>(k);
      shape.emplace_back(data.calls[c].cost * count, data.calls[c].bytes, data.calls[c].needed, item);
    }
    auto [known, fresh] = menus_by_shape.emplace(std::move(shape), std::vector<Choice>{});
    if (fresh) known->second = menu_of(data, calls, count, items);
    menus.push_back(known->second);
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
