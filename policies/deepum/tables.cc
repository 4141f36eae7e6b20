#include "policies/deepum/tables.h"

#include <algorithm>

namespace faultline::policies::deepum {

void ExecutionTable::record(uint64_t id, const uint64_t (&before)[3], uint64_t next) {
  records_[id].push_back({{before[0], before[1], before[2]}, next});
}

std::optional<uint64_t> ExecutionTable::predict(uint64_t id, const uint64_t (&before)[3]) const {
  auto it = records_.find(id);
  if (it == records_.end() || it->second.empty()) return std::nullopt;
  const auto& list = it->second;
  for (auto r = list.rbegin(); r != list.rend(); ++r)
    if (std::equal(before, before + 3, r->before)) return r->next;
  for (auto r = list.rbegin(); r != list.rend(); ++r)
    if (r->before[2] == before[2]) return r->next;
  return list.back().next;
}

void BlockTable::add_successor(uint64_t block, uint64_t next, bool crosses) {
  auto& set = sets_[block % rows_];
  auto way = std::find_if(set.begin(), set.end(), [&](const Way& w) { return w.block == block; });
  if (way == set.end()) {
    if (set.size() == assoc_) set.pop_back(); // the least recently used way goes
    set.insert(set.begin(), {block, {}});
  } else if (way != set.begin()) {
    std::rotate(set.begin(), way, way + 1);
  }
  auto& succ = set.front().next;
  const Successor added{next, crosses};
  auto old = std::find(succ.begin(), succ.end(), added);
  if (old != succ.end()) succ.erase(old);
  succ.insert(succ.begin(), added);
  if (succ.size() > successors_) succ.pop_back();
}

const std::vector<BlockTable::Successor>& BlockTable::successors(uint64_t block) const {
  static const std::vector<Successor> none;
  auto set = sets_.find(block % rows_);
  if (set == sets_.end()) return none;
  for (const Way& w : set->second)
    if (w.block == block) return w.next;
  return none;
}

} // namespace faultline::policies::deepum
