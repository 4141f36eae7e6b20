#include "tracer/convert/access_sets.h"

#include "sim/core/error.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace faultline::capture {
namespace {

using raw::RawUm;
using raw::UmCounter;

constexpr uint64_t kBigPage = 64 * 1024;

// Unified-memory records of one counter kind, sorted by start time.
std::vector<const RawUm*> of_kind(const RawStream& raw, UmCounter counter) {
  std::vector<const RawUm*> out;
  for (const RawUm& u : raw.um)
    if (u.counter == static_cast<uint32_t>(counter)) out.push_back(&u);
  std::stable_sort(out.begin(), out.end(),
                   [](const RawUm* a, const RawUm* b) { return a->start < b->start; });
  return out;
}

template <typename F>
void in_window(const std::vector<const RawUm*>& records, uint64_t begin, uint64_t end, F f) {
  auto it = std::lower_bound(records.begin(), records.end(), begin,
                             [](const RawUm* u, uint64_t t) { return u->start < t; });
  for (; it != records.end() && (*it)->start <= end; ++it) f(**it);
}

template <typename F> void pages_of(const RawUm& u, F f) {
  if (u.value == 0) return;
  for (uint64_t p = u.address / kBigPage; p <= (u.address + u.value - 1) / kBigPage; ++p) f(p);
}

AccessType fault_type(uint32_t flags) {
  switch (static_cast<raw::UmAccess>(flags)) {
  case raw::UmAccess::kWrite:
    return AccessType::kWrite;
  case raw::UmAccess::kAtomic:
    return AccessType::kAtomic;
  default:
    return AccessType::kRead;
  }
}

struct Records {
  std::vector<const RawUm*> htod, dtoh, faults;
  explicit Records(const RawStream& raw)
      : htod(of_kind(raw, UmCounter::kHtoD)), dtoh(of_kind(raw, UmCounter::kDtoH)),
        faults(of_kind(raw, UmCounter::kGpuFault)) {}
};

std::vector<PageAccess> one_operation(const Records& r, const Operation& op,
                                      const raw::RawEvict& evict, uint64_t& ordered) {
  std::map<uint64_t, bool> resident; // page -> ordered yet
  in_window(r.dtoh, evict.begin, evict.end,
            [&](const RawUm& u) { pages_of(u, [&](uint64_t p) { resident[p] = false; }); });
  std::unordered_map<uint64_t, AccessType> types;
  in_window(r.faults, op.gpu_start, op.gpu_end, [&](const RawUm& u) {
    AccessType t = fault_type(u.flags);
    AccessType& slot = types[u.address / kBigPage];
    slot = std::max(slot, t);
  });
  auto type_of = [&](uint64_t p) {
    auto it = types.find(p);
    return it == types.end() ? AccessType::kRead : it->second;
  };
  std::vector<PageAccess> out;
  in_window(r.htod, op.gpu_start, op.gpu_end, [&](const RawUm& u) {
    pages_of(u, [&](uint64_t p) {
      auto it = resident.find(p);
      if (it != resident.end() && !it->second) {
        it->second = true;
        out.push_back({p, type_of(p)});
      }
    });
  });
  ordered += out.size();
  for (const auto& [p, done] : resident)
    if (!done) out.push_back({p, type_of(p)});
  return out;
}

} // namespace

AccessSets assemble_access_sets(const RawStream& raw, const Pass& pass) {
  Records records(raw);
  AccessSets sets;
  for (size_t i = 0; i < pass.ops.size(); ++i) {
    const Operation& op = pass.ops[i];
    if (op.evict_after == Operation::kNone)
      throw TraceError(raw.path + ": operation #" + std::to_string(i) + " (" + op.name +
                       ") has no eviction after it; is this an access-mode pass?");
    sets.per_op.push_back(
        one_operation(records, op, raw.api[op.evict_after].evict, sets.ordered_pages));
    sets.pages += sets.per_op.back().size();
  }
  return sets;
}

} // namespace faultline::capture
