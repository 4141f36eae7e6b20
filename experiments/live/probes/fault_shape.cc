// Issue 21, the big kernels' fault stall: the simulator prices the faults of kernels with many
// faults about twice what the GPU pays (experiments/live/reports/stall-split/). Those kernels
// differ from the calibration's fault benchmarks in three ways, and this probe times each on
// its own, with the replay's touch kernel:
//  - order: a traced kernel's threads sweep their own parts of a range, so its pages come one
//    block after another in turn ("strided": page j of every block, then page j + 1), where the
//    calibration touches each block's pages together ("block");
//  - origin: its pages were evicted by the replay's budget (written on the GPU, moved back by
//    2 MB cudaMemPrefetchAsync calls), where the calibration's were written by the host;
//  - size: hundreds to thousands of blocks at once.
//   build/probes/fault_shape LIB [BLOCKS...]   (default 512 2048)
// LIB: .dev/lib/libfaultline_live.so, the replay's device. One line per case: the kernel's time
// and microseconds per block, medians of 3. Every allocation is checked against free memory.
//   build/probes/fault_shape LIB steps|fill|groups [BLOCKS]   (default 1024)
// The same over every `step`-th 64 KB page of each block (32: one page; 8, 4, 3, 2: 4, 8, 11,
// 16 pages apart from each other; 1: the whole block): whether scattered runs of pages cost
// the fault path a copy each (the strided trace's later kernels migrate 11 runs a block).
// fill: pages faulted beside pages the GPU holds, the density prefetcher copying the runs between.
// groups: some of those cases once more, with CUPTI's fault records.
#include "experiments/live/probes/probe_device.h"
#include "sim/live/calibrate_faults.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace faultline::live;
using faultline::kBigPagesPerBlock;
using faultline::kBlockSize;
using probe::now_ns;

namespace {

enum class Origin { kHost, kEvicted };

// The 64 KB pages of a block a kernel touches: `width` pages from `first`, then as many from
// every `step`-th page on (step 0: none).
struct Pick {
  uint32_t first = 0, step = 1, width = 1;
  bool has(uint64_t page) const {
    return step > 0 && page >= first && (page - first) % step < width;
  }
};

class Shape {
public:
  explicit Shape(LiveDevice& d) : d_(d) {}

  // The kernel's time, in ns, touching the pages `timed` picks of each of `blocks` blocks in
  // `order`, the pages starting on the host as `origin` says and those `prior` picks then
  // brought to the GPU by a kernel of their own (not timed).
  // `faults`: where the timed kernel's fault records go (the run is then slower: it drains
  // the counters before and after).
  int64_t run(uint64_t blocks, FaultOrder order, Origin origin, Pick timed = {},
              Pick prior = {0, 0}, std::vector<FaultRecord>* faults = nullptr) {
    const uint64_t bytes = blocks * kBlockSize;
    if (bytes + kBlockSize + (2ull << 30) > d_.free_bytes())
      std::exit((std::printf("refusing: %llu blocks do not fit the GPU's free memory\n",
                             static_cast<unsigned long long>(blocks)),
                 1));
    std::vector<Touch> touches;
    for (uint64_t page : fault_touches(blocks, kBigPagesPerBlock, order))
      if (timed.has(page % kBigPagesPerBlock)) touches.push_back({0, static_cast<uint32_t>(page)});
    const uint64_t count = touches.size(), first_prior = touches.size();
    for (uint64_t page = 0; page < blocks * kBigPagesPerBlock; ++page)
      if (prior.has(page % kBigPagesPerBlock)) touches.push_back({0, static_cast<uint32_t>(page)});
    const uint64_t first_write = touches.size(), priors = first_write - first_prior;
    for (uint64_t page = 0; page < blocks * kBigPagesPerBlock; ++page) // the eviction's writes
      touches.push_back({1u, static_cast<uint32_t>(page)});
    touches.push_back({1u << 2, 0}); // the scratch page: the fault path warmed up just before
    if (!d_.upload_touches(touches.data(), touches.size())) fail("uploading touches");
    void* scratch = d_.alloc_managed(kBlockSize);
    void* p = d_.alloc_managed(bytes);
    if (!scratch || !p) fail("allocating");
    d_.set_slot(0, p, bytes);
    d_.set_slot(1, scratch, kBlockSize);
    if (origin == Origin::kHost) {
      d_.host_write(p, bytes);
    } else {
      kernel(first_write, blocks * kBigPagesPerBlock); // written on the GPU
      for (uint64_t b = 0; b < blocks; ++b)
        d_.evict_to_host(static_cast<char*>(p) + b * kBlockSize, kBlockSize);
    }
    if (priors > 0) kernel(first_prior, priors);
    d_.synchronize();
    kernel(touches.size() - 1, 1);
    if (faults) drain(nullptr);
    const int64_t t0 = now_ns();
    kernel(0, count);
    const int64_t t = now_ns() - t0;
    if (faults) drain(faults);
    d_.free_managed(p);
    d_.free_managed(scratch);
    return t;
  }

private:
  void kernel(uint64_t first, uint64_t count) { probe::touch_kernel(d_, first, count); }
  void drain(std::vector<FaultRecord>* out) {
    d_.quiesce();
    FaultRecord r[1024];
    for (uint64_t n; (n = d_.take_fault_records(r, 1024)) > 0;)
      if (out) out->insert(out->end(), r, r + n);
  }
  [[noreturn]] void fail(const char* what) { probe::fail(d_, what); }
  LiveDevice& d_;
};

} // namespace

// Three runs of one case, fastest first: each line reports the median, t[1], and all three.
std::vector<int64_t> three_runs(Shape& shape, uint64_t blocks, FaultOrder order, Origin origin,
                                Pick timed = {}, Pick prior = {0, 0}) {
  std::vector<int64_t> t;
  for (int r = 0; r < 3; ++r) t.push_back(shape.run(blocks, order, origin, timed, prior));
  std::sort(t.begin(), t.end());
  return t;
}

const char* origin_name(Origin origin) {
  return origin == Origin::kHost ? "host" : "evicted";
}

int scattered(Shape& shape, uint64_t blocks) {
  for (const uint32_t step : {32u, 8u, 4u, 3u, 2u, 1u})
    for (const Origin origin : {Origin::kHost, Origin::kEvicted})
      for (const FaultOrder order : {FaultOrder::kBlock, FaultOrder::kStrided}) {
        const std::vector<int64_t> t = three_runs(shape, blocks, order, origin, {0, step});
        const int64_t m = t[1];
        const uint32_t pages = (kBigPagesPerBlock + step - 1) / step;
        std::printf("blocks %5llu  step %2u  pages/block %2u  origin %-7s  order %-7s  %9.2f ms  "
                    "%7.1f us a block  %6.2f us a page  (runs %.2f %.2f %.2f ms)\n",
                    static_cast<unsigned long long>(blocks), step, pages, origin_name(origin),
                    fault_order_name(order), m / 1e6, m / 1e3 / blocks, m / 1e3 / blocks / pages,
                    t[0] / 1e6, t[1] / 1e6, t[2] / 1e6);
        std::fflush(stdout);
      }
  return 0;
}

// Pages the GPU faults beside pages it holds: the density prefetcher fills the block, copying
// runs nobody faulted. Whether such a run costs what a faulted one does (the fault path's cost
// per copy) or less (a cost per fault).
int fill(Shape& shape, uint64_t blocks) {
  struct Case {
    Pick timed, prior;
    const char* what;
  };
  const Case cases[] = {
      {{2, 3}, {0, 0}, "11 faults, 11 runs"},
      {{2, 3}, {1, 3}, "11 faults beside 11 held: 11 runs of 2 (block filled)"},
      {{1, 4}, {0, 0}, "8 faults, 8 runs"},
      {{1, 4}, {0, 2}, "8 faults beside 16 held: 16 runs (block filled)"},
      {{1, 2}, {0, 2}, "16 faults beside 16 held: 16 runs"},
      {{2, 4}, {0, 4}, "8 faults beside 8 held: 8 runs (block left in part)"},
      {{1, 2}, {0, 4}, "16 faults beside 8 held: 8 runs of 3 (block filled)"},
      {{4, 8}, {0, 8}, "4 faults beside 4 held: 4 runs (block left in part)"},
      {{1, 2}, {0, 16}, "16 faults beside 2 held: 2 runs of 15 (block filled)"},
      {{0, 2}, {0, 0}, "16 faults, 16 runs (block left in part)"},
      {{0, 4, 2}, {0, 0}, "16 faults, 8 runs of 2 (block left in part)"},
      {{0, 8, 4}, {0, 0}, "16 faults, 4 runs of 4 (block left in part)"},
  };
  for (const Origin origin : {Origin::kHost, Origin::kEvicted})
    for (const Case& c : cases) {
      const std::vector<int64_t> t =
          three_runs(shape, blocks, FaultOrder::kBlock, origin, c.timed, c.prior);
      std::printf(
          "blocks %5llu  origin %-7s  touch %u+%ux%u  held %u+%u  %9.2f ms  %7.1f us a block"
          "  (runs %.2f %.2f %.2f ms)  %s\n",
          static_cast<unsigned long long>(blocks), origin_name(origin), c.timed.first, c.timed.step,
          c.timed.width, c.prior.first, c.prior.step, t[1] / 1e6, t[1] / 1e3 / blocks, t[0] / 1e6,
          t[1] / 1e6, t[2] / 1e6, c.what);
      std::fflush(stdout);
    }
  return 0;
}

// CUPTI's GPU page-fault records of some fill cases, grouped by their end time, in case they
// showed the driver's batches: per case, the groups, records and blocks a group, and how many
// groups named each block. They do not: CUPTI reports far fewer records than faults (43 for
// 1024 faults; experiments/live/data/h200-fault-fill/fault_groups_*.txt).
int groups(Shape& shape, uint64_t blocks) {
  struct Case {
    Pick timed, prior;
    const char* what;
  };
  const Case cases[] = {
      {{0, 32}, {0, 0}, "1 fault"},
      {{0, 2}, {0, 0}, "16 faults (block left in part)"},
      {{1, 2}, {0, 2}, "16 faults beside 16 held"},
      {{2, 3}, {0, 0}, "11 faults"},
      {{2, 3}, {1, 3}, "11 faults beside 11 held"},
      {{0, 1}, {0, 0}, "32 faults (whole block)"},
  };
  for (const Case& c : cases) {
    std::vector<FaultRecord> f;
    const int64_t t = shape.run(blocks, FaultOrder::kBlock, Origin::kHost, c.timed, c.prior, &f);
    std::map<uint64_t, std::map<uint64_t, uint64_t>> batches; // end -> block -> records
    std::map<uint64_t, std::set<uint64_t>> visits;            // block -> ends
    uint64_t grouped = 0;
    for (const FaultRecord& r : f) {
      const uint64_t block = r.address / kBlockSize;
      ++batches[r.end_ns][block];
      visits[block].insert(r.end_ns);
      grouped += r.groups;
    }
    double per_block = 0, blocks_a_batch = 0;
    for (const auto& [end, in] : batches) {
      blocks_a_batch += static_cast<double>(in.size());
      for (const auto& [block, n] : in) per_block += static_cast<double>(n);
    }
    double v = 0;
    for (const auto& [block, ends] : visits) v += static_cast<double>(ends.size());
    const double nb = std::max<double>(1, static_cast<double>(batches.size()));
    std::printf("%-28s %8.2f ms  records %6zu (groups %6llu)  batches %5zu  records a batch %6.1f"
                "  blocks a batch %5.1f  records a block a batch %5.2f  batches a block %5.2f\n",
                c.what, t / 1e6, f.size(), static_cast<unsigned long long>(grouped), batches.size(),
                static_cast<double>(f.size()) / nb, blocks_a_batch / nb,
                per_block / std::max(1.0, blocks_a_batch),
                v / std::max<double>(1, static_cast<double>(visits.size())));
    for (size_t i = 0; i < std::min<size_t>(f.size(), 6); ++i)
      std::printf("    record %zu: block %llu page %llu start %llu end %llu groups %llu\n", i,
                  static_cast<unsigned long long>(f[i].address / kBlockSize),
                  static_cast<unsigned long long>(f[i].address % kBlockSize / (64 << 10)),
                  static_cast<unsigned long long>(f[i].start_ns),
                  static_cast<unsigned long long>(f[i].end_ns),
                  static_cast<unsigned long long>(f[i].groups));
    std::fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return std::printf("usage: fault_shape LIB [steps|fill|groups] [BLOCKS...]\n"), 2;
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool steps = mode == "steps" || mode == "fill" || mode == "groups";
  std::vector<uint64_t> sizes;
  for (int i = steps ? 3 : 2; i < argc; ++i) sizes.push_back(std::stoull(argv[i]));
  LiveDevice& d = *probe::open_device(argv[1]);
  Shape shape(d);
  std::printf("device: %s\n", d.name());
  if (mode == "fill") return fill(shape, sizes.empty() ? 1024 : sizes.front());
  if (mode == "groups") return groups(shape, sizes.empty() ? 1024 : sizes.front());
  if (steps) return scattered(shape, sizes.empty() ? 1024 : sizes.front());
  if (sizes.empty()) sizes = {512, 2048};
  for (const uint64_t blocks : sizes)
    for (const Origin origin : {Origin::kHost, Origin::kEvicted})
      for (const FaultOrder order : {FaultOrder::kBlock, FaultOrder::kStrided}) {
        const std::vector<int64_t> t = three_runs(shape, blocks, order, origin);
        std::printf("blocks %5llu  pages/block %u  origin %-7s  order %-7s  %9.2f ms  %7.1f us a "
                    "block  (runs %.2f %.2f %.2f ms)\n",
                    static_cast<unsigned long long>(blocks), kBigPagesPerBlock, origin_name(origin),
                    fault_order_name(order), t[1] / 1e6, t[1] / 1e3 / blocks, t[0] / 1e6,
                    t[1] / 1e6, t[2] / 1e6);
        std::fflush(stdout);
      }
  return 0;
}
