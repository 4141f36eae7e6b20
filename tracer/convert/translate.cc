#include "tracer/convert/translate.h"

namespace faultline::capture {

using raw::RawType;
constexpr uint64_t kBigPage = uint64_t{64} * 1024;

// Access-pass address -> (allocation ordinal, offset) -> timing-pass address, or 0.
namespace {

uint64_t to_timing(const AllocationWalk& walk, uint64_t address,
                   const std::vector<uint64_t>& timing_addresses) {
  auto* hit = walk.find(address);
  if (!hit || hit->second.ordinal >= timing_addresses.size()) return 0;
  return timing_addresses[hit->second.ordinal] + (address - hit->first);
}

} // namespace

Translated translate(const RawStream& access_raw, const Pass& access, const AccessSets& sets,
                     const std::vector<uint64_t>& timing_addresses) {
  Translated out;
  out.argument_sets = sets.argument_sets;
  out.argument_sets.resize(access.ops.size(), false);
  out.host_touches = access_raw.meta.value("host_touches", false);
  AllocationWalk walk;
  std::vector<HostTouch> touches;
  bool in_range = !access.has_range;
  size_t next = 0;
  std::vector<HostTouch> early;
  for (size_t i = 0; i < access_raw.api.size(); ++i) {
    const ApiEvent& e = access_raw.api[i];
    walk.apply(e);
    if (e.type == RawType::kRange && access.has_range) in_range = e.range.on != 0;
    if ((e.type == RawType::kRange && e.range.on) || e.type == RawType::kStep) {
      early.insert(early.end(), touches.begin(), touches.end());
      touches.clear();
    }
    // Touches before the first operation are the program's set-up (data initialised on the
    // host); they stay, so the first kernels find those pages on the host.
    if (e.type == RawType::kHostTouch && (in_range || next == 0)) {
      if (uint64_t a = to_timing(walk, e.touch.address, timing_addresses))
        touches.push_back({a & ~(kBigPage - 1), e.touch.type == raw::kPageWrite
                                                    ? AccessType::kWrite
                                                    : AccessType::kRead});
      else
        ++out.untranslated;
    }
    if (next >= access.ops.size() || access.ops[next].api_index != i) continue;
    out.touches_before_mark.push_back(std::move(early));
    out.touches_before.push_back(std::move(touches));
    early.clear();
    touches.clear();
    std::vector<trace::Access> accesses;
    for (const PageAccess& p : sets.per_op[next]) {
      if (uint64_t address = to_timing(walk, p.big_page * kBigPage, timing_addresses))
        accesses.push_back({address / kBigPage, 0, p.type});
      else
        ++out.untranslated;
    }
    out.per_op.push_back(std::move(accesses));
    ++next;
  }
  out.touches_after = std::move(early);
  out.touches_after.insert(out.touches_after.end(), touches.begin(), touches.end());
  return out;
}

} // namespace faultline::capture
