#include "tracer/convert/sanitized.h"

#include "sim/core/error.h"

#include <algorithm>
#include <unordered_map>

namespace faultline::capture {
namespace {

using raw::RawType;
constexpr uint64_t kBigPage = uint64_t{64} * 1024;
constexpr size_t kPhases = 64;

AccessType strongest(uint32_t bits) {
  if (bits & raw::kPageAtomic) return AccessType::kAtomic;
  if (bits & raw::kPageWrite) return AccessType::kWrite;
  return AccessType::kRead;
}

class SetBuilder {
public:
  SetBuilder(const AllocationWalk& walk, AccessSets& sets) : walk_(walk), sets_(sets) {}

  // Adds a page (access-pass big page number) with type bits; the first add fixes its place.
  void add(uint64_t big_page, uint32_t bits) {
    auto* hit = walk_.find(big_page * kBigPage);
    if (!hit) return void(++sets_.unowned_pages);
    if (hit->second.kind != raw::AllocKind::kManaged) return void(++sets_.device_pages);
    auto [it, fresh] = index_.try_emplace(big_page, order_.size());
    if (fresh) order_.push_back({big_page, AccessType::kRead});
    bits_[it->second] |= bits;
  }

  // A copy's range; host memory at either end is no allocation and is skipped.
  void add_range(uint64_t address, uint64_t bytes, uint32_t bits) {
    if (bytes == 0 || !walk_.find(address)) return;
    for (uint64_t p = address / kBigPage; p <= (address + bytes - 1) / kBigPage; ++p) add(p, bits);
  }

  // First-touch order is kept at the resolution of kPhases phases of the kernel's pages;
  // inside a phase pages go in address order. Thousands of warps race to touch first, so the
  // order inside a phase is noise, and address order compresses the trace 3-4 times better.
  std::vector<PageAccess> take() {
    for (size_t i = 0; i < order_.size(); ++i) order_[i].type = strongest(bits_[i]);
    const size_t n = order_.size();
    for (size_t phase = 0; phase < kPhases; ++phase)
      std::sort(order_.begin() + n * phase / kPhases, order_.begin() + n * (phase + 1) / kPhases,
                [](const PageAccess& a, const PageAccess& b) { return a.big_page < b.big_page; });
    sets_.pages += order_.size();
    sets_.ordered_pages += order_.size();
    return std::move(order_);
  }

private:
  const AllocationWalk& walk_;
  AccessSets& sets_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<PageAccess> order_;
  std::unordered_map<size_t, uint32_t> bits_;
};

std::unordered_map<uint32_t, const ApiEvent*> pages_by_launch(const RawStream& raw) {
  std::unordered_map<uint32_t, const ApiEvent*> out;
  for (const ApiEvent& e : raw.api)
    if (e.type == RawType::kPages) out[e.pages.corr] = &e;
  return out;
}

std::vector<PageAccess> kernel_set(const RawStream& raw, const ApiEvent& launch,
                                   const ApiEvent* pages, size_t index, SetBuilder& b,
                                   AccessSets& sets, bool& arguments) {
  const std::string what =
      raw.path + ": operation #" + std::to_string(index) + " (" + demangle(launch.name) + ")";
  if (!pages)
    throw TraceError(what + " has no pages record; the sanitize pass ended before the kernel did");
  if (pages->pages.flags & raw::kPagesOverflow)
    throw TraceError(what + " touched more pages than the device list holds; its set is " +
                     "incomplete");
  arguments = pages->pages.flags & raw::kPagesWarpgroupMma;
  sets.outside_accesses += pages->pages.outside;
  const uint64_t base = pages->pages.window_base / kBigPage;
  for (uint32_t entry : pages->entries)
    b.add(base + (entry & raw::kPageIndexMask), entry >> raw::kPageIndexBits);
  return b.take();
}

// A copy stays inside the allocation it starts in (CUDA refuses one that does not): a stream
// that says otherwise is corrupt, and walking its pages past the allocation could take as long
// as the address space (found by fuzzing).
template <typename F>
void check_copy_end(const AllocationWalk& walk, uint64_t address, uint64_t bytes, const F& what) {
  const auto* hit = walk.find(address);
  if (!hit || bytes <= hit->first + hit->second.size - address) return;
  throw TraceError(what() + ": a copy of " + std::to_string(bytes) + " bytes at address " +
                   std::to_string(address) + " runs past the end of its allocation (" +
                   std::to_string(hit->second.size) + " bytes at " + std::to_string(hit->first) +
                   ")");
}

} // namespace

bool is_sanitized(const RawStream& raw) {
  return raw.meta.value("mode", "") == "sanitize";
}

AccessSets sanitized_access_sets(const RawStream& raw, const Pass& pass) {
  AccessSets sets;
  const auto pages = pages_by_launch(raw);
  AllocationWalk walk;
  size_t next = 0;
  for (size_t i = 0; i < raw.api.size() && next < pass.ops.size(); ++i) {
    const ApiEvent& e = raw.api[i];
    walk.apply(e);
    if (pass.ops[next].api_index != i) continue;
    SetBuilder b(walk, sets);
    bool arguments = false;
    if (e.type == RawType::kLaunch) {
      auto it = pages.find(e.launch.corr_driver);
      sets.per_op.push_back(
          kernel_set(raw, e, it == pages.end() ? nullptr : it->second, next, b, sets, arguments));
    } else {
      const bool memset = e.copy.op == static_cast<uint32_t>(raw::CopyOp::kMemset);
      const auto what = [&] { return raw.path + ": operation #" + std::to_string(next); };
      if (!memset) check_copy_end(walk, e.copy.src, e.copy.bytes, what);
      check_copy_end(walk, e.copy.dst, e.copy.bytes, what);
      if (!memset) b.add_range(e.copy.src, e.copy.bytes, raw::kPageRead);
      b.add_range(e.copy.dst, e.copy.bytes, raw::kPageWrite);
      sets.per_op.push_back(b.take());
    }
    sets.argument_sets.push_back(arguments);
    ++next;
  }
  return sets;
}

} // namespace faultline::capture
