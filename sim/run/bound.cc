#include "sim/run/bound.h"

#include "sim/core/error.h"
#include "sim/run/issue.h"
#include "sim/run/results.h"
#include "sim/trace/inspect.h"
#include "sim/trace/step_repeater.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace faultline {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// The trace as MIN reads it: kernel touches of big pages, and the events that take pages off
// the GPU whatever a policy does (a free: the page holds no data after; a host access: it holds
// data, on the host).
struct Event {
  enum Kind : uint8_t { kTouch, kFreed, kHostTouched } kind;
  bool measured; // in a step from step 0 on
  uint64_t page;
};

struct Flattened {
  std::vector<Event> events;
  Time all_resident_ns = 0;
  uint64_t references = 0;
  // The steps from step 0 on: how many, the program's own time for them, their kernels' time.
  uint64_t measured_steps = 0;
  Time measured_program_ns = 0, measured_gpu_ns = 0;
};

// Calls f(big page) for every 64 KB big page [address, address + size) overlaps.
template <class F> void for_pages(Addr address, Bytes size, F f) {
  if (size == 0) return;
  for (uint64_t p = address / kBigPageSize; p <= (address + size - 1) / kBigPageSize; ++p) f(p);
}

// `host_fault_ns` and `reverse` price a host access's captured CPU faults as the simulator does
// (captured_host_faults_ns): the big pages a kernel touched since the host last did.
Flattened flatten(const std::string& path, uint64_t iterations, Time host_fault_ns,
                  const config::LinkCurve& reverse, StepRange range) {
  Flattened out;
  trace::StepRepeater reader(path, iterations);
  std::unordered_map<uint64_t, trace::AllocRecord> live;
  std::map<Addr, Addr> managed; // live managed allocations: start -> end (device memory stays)
  const auto is_managed = [&](uint64_t page) {
    const Addr lo = page * kBigPageSize, hi = lo + kBigPageSize;
    auto it = managed.lower_bound(hi);
    return it != managed.begin() && std::prev(it)->second > lo;
  };
  std::unordered_set<uint64_t> in_kernel, captured_on_gpu;
  trace::Record r;
  bool first = true;
  Time start = 0, end = 0;
  // An issue-time trace's all-resident time is its timeline played with no fault, as the
  // simulator plays it (sim/README.md): the CPU at its recorded distances, kernels back to back
  // behind it, syncs, host accesses and segment frees waiting for the GPU. The captured
  // program's CPU faults on host accesses lie in those distances, and the simulator takes them
  // out (host_credit), so a run whose host touches cost nothing is that much shorter.
  const bool issue = reader.timeline() == trace::Timeline::kIssue;
  Time cpu_free = 0, cpu_mark = 0, gpu_end = 0, host_credit = 0;
  int64_t last_step = -1;
  while (reader.next(r)) {
    if (first) start = cpu_free = cpu_mark = r.time();
    first = false;
    const bool measured = range.holds(reader.step());
    if (measured && reader.step() != last_step) {
      last_step = reader.step();
      ++out.measured_steps;
      out.measured_program_ns += reader.program_step_ns(last_step);
    }
    const auto freed = r.type == trace::RecordType::kFree ? live.find(r.free.id) : live.end();
    if (issue && r.type == trace::RecordType::kKernel) {
      for (const trace::Access& a : r.kernel.accesses)
        if (is_managed(a.big_page)) captured_on_gpu.insert(a.big_page);
    } else if (issue && r.type == trace::RecordType::kHostAccess) {
      uint64_t block = 0, pulled = 0; // pages pulled back from `block`, priced a block at a time
      const auto price = [&] {
        if (pulled > 0) host_credit += captured_host_faults_ns(pulled, host_fault_ns, reverse);
        pulled = 0;
      };
      for_pages(r.host.address, r.host.size, [&](uint64_t p) {
        if (p / kBigPagesPerBlock != block) price();
        block = p / kBigPagesPerBlock;
        pulled += captured_on_gpu.erase(p);
      });
      price();
    }
    if (issue) {
      const Time gap = std::max<Time>(0, r.time() - cpu_mark);
      const Time credit = std::min(gap, host_credit);
      host_credit -= credit;
      const Time due = cpu_free + gap - credit;
      // A free of an id the trace never allocated releases nothing, as a block's free: no wait.
      const bool waits = cpu_waits_for_gpu(
          r, freed != live.end() ? freed->second.kind : trace::MemoryKind::kAllocatorBlock);
      if (r.type == trace::RecordType::kKernel)
        gpu_end = std::max(due, gpu_end) + r.kernel.duration;
      cpu_free = waits ? std::max(due, gpu_end) : due;
      cpu_mark = cpu_done(r);
    }
    switch (r.type) {
    case trace::RecordType::kAlloc:
      live[r.alloc.id] = r.alloc;
      if (r.alloc.kind == trace::MemoryKind::kManaged)
        managed[r.alloc.address] = r.alloc.address + r.alloc.size;
      break;
    case trace::RecordType::kFree: {
      if (freed == live.end()) break;
      if (freed->second.kind != trace::MemoryKind::kDevice)
        for_pages(freed->second.address, freed->second.size, [&](uint64_t p) {
          out.events.push_back({Event::kFreed, measured, p});
        });
      if (freed->second.kind == trace::MemoryKind::kManaged) managed.erase(freed->second.address);
      live.erase(freed);
      break;
    }
    case trace::RecordType::kHostAccess:
      for_pages(r.host.address, r.host.size, [&](uint64_t p) {
        if (is_managed(p)) out.events.push_back({Event::kHostTouched, measured, p});
      });
      break;
    case trace::RecordType::kKernel:
      in_kernel.clear();
      for (const trace::Access& a : r.kernel.accesses)
        if (is_managed(a.big_page) && in_kernel.insert(a.big_page).second)
          out.events.push_back({Event::kTouch, measured, a.big_page});
      out.references += in_kernel.size();
      if (measured) out.measured_gpu_ns += r.kernel.duration;
      end = std::max(end, r.kernel.start + r.kernel.duration);
      break;
    default:
      break;
    }
  }
  out.all_resident_ns =
      issue ? std::max(gpu_end, cpu_free) - start : std::max<Time>(0, end - start);
  return out;
}

struct Misses {
  uint64_t moves = 0;   // misses that copy (the page holds data)
  uint64_t repeats = 0; // of those, misses of a page the GPU touched before in the same epoch
  uint64_t measured_moves = 0; // of the moves, those at a touch in the measured steps
};

// Belady's MIN with bypass: on a miss, the page whose next touch is furthest (the new one
// included) is the one not kept. An epoch of a page ends at its free or a host touch; the first
// miss after a host touch copies the host's data, every later miss in the epoch copies data the
// GPU had (a repeat). MIN has the fewest misses, and so the fewest repeats, since every policy
// has the same first misses.
Misses min_moves(const std::vector<Event>& events, uint64_t capacity) {
  // next[i]: the event index of the page's next touch after event i while it stays on the GPU
  // (a free or host touch in between takes it off whatever is done: never).
  std::vector<uint64_t> next(events.size(), kNever);
  std::unordered_map<uint64_t, uint64_t> upcoming;
  for (size_t i = events.size(); i-- > 0;) {
    const Event& e = events[i];
    if (e.kind != Event::kTouch) {
      upcoming[e.page] = kNever;
      continue;
    }
    auto it = upcoming.find(e.page);
    next[i] = it == upcoming.end() ? kNever : it->second;
    upcoming[e.page] = i;
  }
  std::unordered_map<uint64_t, uint64_t> cached; // page -> its next touch
  std::unordered_map<uint64_t, bool> holds_data; // page -> touched since its allocation
  std::unordered_set<uint64_t> gpu_touched;      // pages the GPU touched in their epoch
  std::priority_queue<std::pair<uint64_t, uint64_t>> furthest; // (next touch, page), lazy
  Misses out;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind != Event::kTouch) {
      cached.erase(e.page);
      gpu_touched.erase(e.page);
      holds_data[e.page] = e.kind == Event::kHostTouched;
      continue;
    }
    bool& data = holds_data[e.page];
    const bool repeat = !gpu_touched.insert(e.page).second;
    auto hit = cached.find(e.page);
    if (hit != cached.end()) {
      hit->second = next[i];
      furthest.push({next[i], e.page});
      continue;
    }
    if (data) {
      ++out.moves;
      out.repeats += repeat;
      out.measured_moves += e.measured;
    }
    data = true;
    if (capacity == 0) continue;
    if (cached.size() == capacity) {
      while (!furthest.empty()) { // drop stale entries
        const auto [when, page] = furthest.top();
        auto c = cached.find(page);
        if (c != cached.end() && c->second == when) break;
        furthest.pop();
      }
      if (furthest.top().first <= next[i]) continue; // the new page is the furthest: bypass
      cached.erase(furthest.top().second);
      furthest.pop();
    }
    cached[e.page] = next[i];
    furthest.push({next[i], e.page});
  }
  return out;
}

double best_gbps(const config::LinkCurve& curve) {
  double best = 0;
  for (const auto& [bytes, gbps] : curve.points) best = std::max(best, gbps);
  return best;
}

} // namespace

LowerBound lower_bound(const std::string& trace_path, uint64_t iterations, uint64_t capacity_chunks,
                       const config::LinkProfile& host_link, Time host_fault_ns,
                       StepRange measured) {
  const Flattened trace =
      flatten(trace_path, iterations, host_fault_ns, host_link.reverse, measured);
  LowerBound b;
  b.all_resident_ns = trace.all_resident_ns;
  b.references = trace.references;
  b.capacity_big_pages = capacity_chunks * kBigPagesPerBlock;
  const Misses misses = min_moves(trace.events, b.capacity_big_pages);
  b.min_pages_moved = misses.moves;
  b.min_repeat_pages = misses.repeats;
  b.link_gbps = best_gbps(host_link.forward); // GB/s: bytes per ns
  b.reverse_link_gbps = best_gbps(host_link.reverse);
  MeasuredBound& m = b.measured;
  m.range = measured;
  m.steps = trace.measured_steps;
  m.program_ns = trace.measured_program_ns;
  m.gpu_ns = trace.measured_gpu_ns;
  m.all_resident_ns = m.program_ns > 0 ? m.program_ns : m.gpu_ns;
  m.min_pages_moved = misses.measured_moves;
  m.lower_bound_ns = std::max(m.all_resident_ns, m.gpu_ns);
  if (b.link_gbps <= 0) {
    b.lower_bound_ns = b.all_resident_ns;
    return b;
  }
  // Per 64 KB page, the least link time of a copy: its bytes at the best bandwidth, and its
  // share of a transfer's overhead (a transfer carries one 2 MB block at most).
  const double page = static_cast<double>(kBigPageSize);
  const double per_block = static_cast<double>(kBigPagesPerBlock);
  const double in =
      page / b.link_gbps + static_cast<double>(host_link.forward.overhead_ns) / per_block;
  const double moves = static_cast<double>(b.min_pages_moved);
  b.transfer_ns = static_cast<Time>(std::floor(moves * in));
  if (b.reverse_link_gbps > 0) {
    // A repeat miss pays either a copy out (the page left the GPU since the GPU touched it) or,
    // served remotely (no copy out), a whole transfer to the GPU of its own at the previous
    // touch. Weighing the two directions' link times by lambda and 1 - lambda, every run takes
    // at least lambda * in * moves + min((1 - lambda) * out, lambda * (remote - in)) * repeats;
    // the weight where the two terms of the min meet gives the most (sim/README.md).
    const double out =
        page / b.reverse_link_gbps + static_cast<double>(host_link.reverse.overhead_ns) / per_block;
    const double remote = page / b.link_gbps + static_cast<double>(host_link.forward.overhead_ns);
    const double lambda = out / (out + remote - in);
    const double repeats = static_cast<double>(b.min_repeat_pages);
    b.duplex_ns = static_cast<Time>(std::floor(lambda * (in * moves + (remote - in) * repeats)));
  }
  b.lower_bound_ns = std::max({b.all_resident_ns, b.transfer_ns, b.duplex_ns});
  const uint64_t preloadable = std::min(m.min_pages_moved, b.capacity_big_pages);
  m.transfer_ns =
      static_cast<Time>(std::floor(static_cast<double>(m.min_pages_moved - preloadable) * in));
  m.lower_bound_ns = std::max(m.lower_bound_ns, m.transfer_ns);
  return b;
}

nlohmann::json to_json(const LowerBound& b) {
  return {
      {"all_resident_ns", b.all_resident_ns},
      {"capacity_big_pages", b.capacity_big_pages},
      {"references", b.references},
      {"min_bytes_host_to_gpu", b.min_pages_moved * kBigPageSize},
      {"min_repeat_bytes", b.min_repeat_pages * kBigPageSize},
      {"link_gbps", b.link_gbps},
      {"reverse_link_gbps", b.reverse_link_gbps},
      {"transfer_ns", b.transfer_ns},
      {"duplex_ns", b.duplex_ns},
      {"lower_bound_ns", b.lower_bound_ns},
      {"measured_steps",
       {{"first_step", b.measured.range.first},
        {"last_step", b.measured.range.last == INT64_MAX ? nlohmann::json()
                                                         : nlohmann::json(b.measured.range.last)},
        {"steps", b.measured.steps},
        {"program_ns", b.measured.program_ns},
        {"gpu_ns", b.measured.gpu_ns},
        {"all_resident_ns", b.measured.all_resident_ns},
        {"min_bytes_host_to_gpu", b.measured.min_pages_moved * kBigPageSize},
        {"transfer_ns", b.measured.transfer_ns},
        {"lower_bound_ns", b.measured.lower_bound_ns}}}};
}

nlohmann::json bound_document(const std::string& config_path, const std::string& trace_path,
                              uint64_t iterations, StepRange measured) {
  config::RunConfig c = config::load_run_config(config_path);
  if (c.gpus != 1 || !c.neighbours.empty() || !c.topology.gpus.empty())
    throw ConfigError(config_path + ": the lower bound is defined for one job on one GPU (no " +
                      "topology, gpus 1, no neighbour_jobs): a neighbour's memory is a second " +
                      "source of pages");
  if (iterations > 0) {
    c.iterations = iterations;
    c.resolved["iterations"] = iterations;
  }
  const trace::TraceStats stats = trace::compute_stats(trace_path);
  const uint64_t chunks = c.capacity.chunks(stats.footprint_chunks);
  c.resolved["capacity"]["resolved_bytes"] = chunks * kBlockSize;
  nlohmann::json out;
  out["faultline"] = {{"git_revision", git_revision()}, {"trace_format_version", trace::kVersion}};
  out["trace"] = {{"path", trace_path}, {"footprint_bytes", stats.footprint_bytes()}};
  out["config"] = c.resolved;
  out["bound"] = to_json(
      lower_bound(trace_path, c.iterations, chunks, c.host_link, c.gpu.host_fault_ns, measured));
  return out;
}

} // namespace faultline
