// What the GPU holds after the replay's touches, block by block (issue 21 items 3 and 4):
//   build/probes/residency_probe LIB density [BLOCKS]
//     k of each block's 32 big pages touched (read), all in one kernel or one kernel per page in
//     order, on fresh memory and on host data; then each block evicted alone, its bytes back
//     (CUPTI's counters) the pages it held. One line per (blocks, k, order, memory): the mean
//     and how many blocks held k, more than k but not all, or all 32 pages.
//   build/probes/residency_probe LIB partial [BLOCKS]
//     What evicting a partly held chunk costs (bfs at a budget evicts chunks holding 7 of 32
//     pages on average): k pages of each block written by one kernel (fresh memory) or read
//     (host data), the first k or k spread over the block; then all blocks evicted in a row,
//     one 2 MB call each, and the stream waited for. Microseconds a chunk and pages back a
//     chunk, median of 3.
//   build/probes/residency_probe LIB refill [BLOCKS]
//     Whether evicting a chunk the GPU populated in part (fresh memory) populates its other pages
//     on the host: k pages of each block written, the rest never touched or written and then
//     discarded; all evicted (2 MB calls), then k more pages written (the next k, or the same k
//     again; k = 0: 8 pages of chunks nobody touched), then all evicted again. Per chunk:
//     each eviction's microseconds and pages back, and the pages the second kernel brought in
//     (pages the host populated migrate in; pages nobody populated are made on the GPU).
//   build/probes/residency_probe LIB threshold [BLOCKS]
//     k = 17..24 pages of each block touched at once, and [0, j) by one kernel then [j, k) by
//     the next: where the driver's choice to fill the block lies.
//   build/probes/residency_probe LIB revive [BLOCKS]
//     Kernel-written blocks wholly discarded, then written (or read) by a kernel, with or without
//     a 2 MB prefetch to the GPU between: whether a prefetch brings discarded pages back as
//     resident ones (the write then costs a hit) or leaves them discarded (the write pays the
//     discarded fault). Microseconds per page touched, median of 3, and the prefetch's bytes in.
// LIB: .dev/lib/libfaultline_live.so. Every allocation is checked against the GPU's free memory.
#include "experiments/live/probes/probe_device.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace faultline::live;
using probe::now_ns;

namespace {
constexpr uint64_t kBlock = 2 << 20;
constexpr uint32_t kPages = 32;
constexpr uint64_t kPage = kBlock / kPages;

[[noreturn]] void die(const char* what, LiveDevice& d) {
  std::printf("%s: %s\n", what, d.error());
  std::exit(1);
}

char* alloc(LiveDevice& d, uint64_t blocks) {
  if (blocks * kBlock + (1ull << 30) > d.free_bytes()) {
    std::printf("refusing: %llu blocks do not fit the GPU's free memory\n",
                static_cast<unsigned long long>(blocks));
    std::exit(1);
  }
  auto* a = static_cast<char*>(d.alloc_managed(blocks * kBlock));
  if (!a) die("alloc failed", d);
  d.set_slot(0, a, blocks * kBlock);
  return a;
}

// Touches of pages [lo, hi) of each block, page-major when `by_page` (so that a range of them
// is one page of every block), block-major otherwise.
uint64_t upload(LiveDevice& d, uint64_t blocks, uint32_t lo, uint32_t hi, bool write,
                bool by_page) {
  std::vector<Touch> t;
  const uint32_t type = write ? 1u : 0u;
  if (by_page) {
    for (uint32_t p = lo; p < hi; ++p)
      for (uint64_t b = 0; b < blocks; ++b)
        t.push_back({type, static_cast<uint32_t>(b * kPages + p)});
  } else {
    for (uint64_t b = 0; b < blocks; ++b)
      for (uint32_t p = lo; p < hi; ++p) t.push_back({type, static_cast<uint32_t>(b * kPages + p)});
  }
  if (!d.upload_touches(t.data(), t.size())) die("uploading touches failed", d);
  return t.size();
}

void run(LiveDevice& d, uint64_t first, uint64_t count) {
  if (!d.run_kernel(first, count, 0)) die("touch kernel failed", d);
}

// What each of the n blocks at `a` holds, by evicting it alone (its bytes back), then frees
// them: the mean pages a block, and how many held exactly k, between k and all, all 32.
struct Census {
  double mean = 0;
  unsigned long long at_k = 0, between = 0, full = 0;
};
Census census(LiveDevice& d, char* a, uint64_t n, uint32_t k) {
  Census c;
  for (uint64_t b = 0; b < n; ++b) {
    const Counters c0 = d.counters();
    d.evict_to_host(a + b * kBlock, kBlock);
    const Counters c1 = d.counters();
    const uint64_t pages = (c1.bytes_gpu_to_host - c0.bytes_gpu_to_host) / kPage;
    c.mean += static_cast<double>(pages) / static_cast<double>(n);
    c.at_k += pages == k;
    c.full += pages == kPages;
    c.between += pages > k && pages < kPages;
  }
  d.free_managed(a);
  return c;
}

void density(LiveDevice& d, uint64_t max_blocks) {
  std::printf("blocks k order    memory  mean  =k  k<x<32  32   (pages held per block)\n");
  for (const uint64_t n : {uint64_t{1}, uint64_t{16}, max_blocks})
    for (const uint32_t k : {17u, 20u, 24u})
      for (const bool in_order : {false, true})
        for (const bool host : {false, true}) {
          char* a = alloc(d, n);
          if (host) d.host_write(a, n * kBlock);
          const uint64_t count = upload(d, n, 0, k, false, in_order);
          if (in_order)
            for (uint32_t p = 0; p < k; ++p) run(d, p * n, n);
          else
            run(d, 0, count);
          d.synchronize();
          const Census c = census(d, a, n, k);
          std::printf("%6llu %2u %-8s %-6s %5.1f %4llu %6llu %4llu\n",
                      static_cast<unsigned long long>(n), k, in_order ? "in-order" : "at-once",
                      host ? "host" : "fresh", c.mean, c.at_k, c.between, c.full);
        }
}

// One block at a time, how the driver's choice depends on k touched at once, and on pages
// [0, j) touched by an earlier kernel before [j, k).
void threshold(LiveDevice& d, uint64_t n) {
  std::printf("blocks first-kernel second-kernel  mean  =k  k<x<32  32\n");
  struct Split {
    uint32_t j, k;
  };
  std::vector<Split> splits;
  for (uint32_t k = 17; k <= 24; ++k) splits.push_back({0, k});
  for (const Split s : {Split{8, 17}, Split{12, 17}, Split{16, 17}, Split{16, 18}, Split{8, 20},
                        Split{16, 20}, Split{12, 24}, Split{4, 17}, Split{1, 17}})
    splits.push_back(s);
  for (const Split s : splits) {
    char* a = alloc(d, n);
    if (s.j > 0) {
      run(d, 0, upload(d, n, 0, s.j, false, false));
      d.synchronize();
    }
    run(d, 0, upload(d, n, s.j, s.k, false, false));
    d.synchronize();
    const Census c = census(d, a, n, s.k);
    std::printf("%6llu   [0,%2u)        [%2u,%2u)      %5.1f %4llu %6llu %4llu\n",
                static_cast<unsigned long long>(n), s.j, s.j, s.k, c.mean, c.at_k, c.between,
                c.full);
  }
}

// Pages of a block touched by the partial case: the first k, or k spread evenly over 32.
std::vector<uint32_t> partial_pages(uint32_t k, bool spread) {
  std::vector<uint32_t> pages;
  for (uint32_t i = 0; i < k; ++i) pages.push_back(spread ? i * kPages / k : i);
  return pages;
}

struct Evicted {
  double us = 0, pages = 0;
};

// Evicts n blocks at `a` in a row, one 2 MB call each: microseconds and pages back a chunk.
Evicted evict_all(LiveDevice& d, char* a, uint64_t n) {
  d.quiesce();
  const Counters c0 = d.counters();
  const int64_t t0 = now_ns();
  for (uint64_t b = 0; b < n; ++b) d.evict_to_host(a + b * kBlock, kBlock);
  d.synchronize();
  const int64_t t1 = now_ns();
  d.quiesce();
  const Counters c1 = d.counters();
  const double chunks = static_cast<double>(n);
  return {(t1 - t0) / 1e3 / chunks,
          static_cast<double>(c1.bytes_gpu_to_host - c0.bytes_gpu_to_host) / kPage / chunks};
}

Evicted evict_partial_once(LiveDevice& d, uint64_t n, uint32_t k, bool spread, bool host) {
  char* a = alloc(d, n);
  if (host) d.host_write(a, n * kBlock);
  std::vector<Touch> t;
  for (uint64_t b = 0; b < n; ++b)
    for (const uint32_t p : partial_pages(k, spread))
      t.push_back({host ? 0u : 1u, static_cast<uint32_t>(b * kPages + p)});
  if (!d.upload_touches(t.data(), t.size())) die("uploading touches failed", d);
  run(d, 0, t.size());
  d.synchronize();
  const Evicted e = evict_all(d, a, n);
  d.free_managed(a);
  return e;
}

void partial(LiveDevice& d, uint64_t n) {
  std::printf("memory  k  layout   us/chunk  pages back/chunk   (%llu chunks evicted in a row)\n",
              static_cast<unsigned long long>(n));
  for (const bool host : {false, true})
    for (const uint32_t k : {1u, 2u, 4u, 8u, 16u, 32u})
      for (const bool spread : {false, true}) {
        if (k == 32 && spread) continue;
        std::vector<Evicted> runs;
        for (int i = 0; i < 3; ++i) runs.push_back(evict_partial_once(d, n, k, spread, host));
        std::sort(runs.begin(), runs.end(),
                  [](const Evicted& x, const Evicted& y) { return x.us < y.us; });
        std::printf("%-6s %2u  %-7s %9.1f %17.1f\n", host ? "host" : "fresh", k,
                    spread ? "spread" : "first", runs[1].us, runs[1].pages);
        std::fflush(stdout);
      }
}

struct Refilled {
  double evict1_us = 0, back1 = 0, touch_us = 0, in = 0, evict2_us = 0, back2 = 0;
};

// One refill case: k pages of each block held by the GPU, the rest never touched (fresh) or
// written and then discarded; evicted or not; then k more pages written (the next k, or the
// same k again).
struct RefillCase {
  uint32_t k;
  bool discarded, evict_first, again;
};

Refilled refill_once(LiveDevice& d, uint64_t n, const RefillCase& c) {
  char* a = alloc(d, n);
  if (c.discarded || c.k > 0) run(d, 0, upload(d, n, 0, c.discarded ? kPages : c.k, true, false));
  d.synchronize();
  if (c.discarded)
    for (uint64_t b = 0; b < n; ++b)
      d.discard(a + b * kBlock + c.k * kPage, (kPages - c.k) * kPage);
  d.synchronize();
  Refilled r;
  if (c.evict_first) {
    const Evicted e = evict_all(d, a, n);
    r.evict1_us = e.us;
    r.back1 = e.pages;
  }
  const uint32_t lo = c.again ? 0 : c.k;
  const uint32_t hi = std::min(kPages, lo + std::max(c.k, 8u)); // k = 0: 8 pages
  const uint64_t count = upload(d, n, lo, hi, true, false);
  d.quiesce();
  const Counters c0 = d.counters();
  const int64_t t0 = now_ns();
  run(d, 0, count);
  d.synchronize();
  const int64_t t1 = now_ns();
  d.quiesce();
  const Counters c1 = d.counters();
  const Evicted e = evict_all(d, a, n);
  d.free_managed(a);
  const double chunks = static_cast<double>(n);
  r.touch_us = (t1 - t0) / 1e3 / static_cast<double>(count);
  r.in = static_cast<double>(c1.bytes_host_to_gpu - c0.bytes_host_to_gpu) / kPage / chunks;
  r.evict2_us = e.us;
  r.back2 = e.pages;
  return r;
}

void refill(LiveDevice& d, uint64_t n) {
  std::printf("k  rest       first-eviction  second-kernel   evict1 us  back1  touch us/page  "
              "in/chunk  evict2 us  back2   (%llu chunks, median of 3 by evict2)\n",
              static_cast<unsigned long long>(n));
  std::vector<RefillCase> cases;
  cases.push_back({0, false, true, false}); // never touched: what evicting them does
  for (const uint32_t k : {1u, 8u, 16u, 31u})
    for (const bool discarded : {false, true}) {
      if (k == 1 && discarded) continue;
      cases.push_back({k, discarded, true, false});
      cases.push_back({k, discarded, true, true});
      cases.push_back({k, discarded, false, false});
    }
  for (const RefillCase& c : cases) {
    std::vector<Refilled> runs;
    for (int i = 0; i < 3; ++i) runs.push_back(refill_once(d, n, c));
    std::sort(runs.begin(), runs.end(),
              [](const Refilled& x, const Refilled& y) { return x.evict2_us < y.evict2_us; });
    const Refilled& m = runs[1];
    std::printf("%2u %-10s %-15s %-14s %9.1f %6.1f %14.2f %9.1f %10.1f %6.1f\n", c.k,
                c.discarded ? "discarded" : "fresh", c.evict_first ? "evicted" : "none",
                c.again ? "same pages" : "new pages", m.evict1_us, m.back1, m.touch_us, m.in,
                m.evict2_us, m.back2);
    std::fflush(stdout);
  }
}

struct Revived {
  double prefetch_us = 0, touch_us = 0, bytes_in = 0;
};

// n kernel-written blocks wholly discarded, then maybe prefetched, then touched whole.
Revived revive_once(LiveDevice& d, uint64_t n, bool prefetch, bool write, bool discard) {
  char* a = alloc(d, n);
  const uint64_t count = upload(d, n, 0, kPages, true, false);
  run(d, 0, count);
  if (discard) d.discard(a, n * kBlock);
  d.synchronize();
  Revived r;
  const Counters c0 = d.counters();
  const int64_t t0 = now_ns();
  if (prefetch) d.prefetch_to_gpu(a, n * kBlock);
  d.synchronize();
  const int64_t t1 = now_ns();
  const Counters c1 = d.counters();
  upload(d, n, 0, kPages, write, false);
  const int64_t t2 = now_ns();
  run(d, 0, count);
  d.synchronize();
  const int64_t t3 = now_ns();
  d.free_managed(a);
  const double pages = static_cast<double>(n * kPages);
  r.prefetch_us = (t1 - t0) / 1e3 / pages;
  r.touch_us = (t3 - t2) / 1e3 / pages;
  r.bytes_in = static_cast<double>(c1.bytes_host_to_gpu - c0.bytes_host_to_gpu) / pages;
  return r;
}

void revive(LiveDevice& d, uint64_t n) {
  std::printf("case (kernel-written blocks)                 prefetch us/page  touch us/page  "
              "bytes in/page\n");
  struct Case {
    const char* name;
    bool discard, prefetch, write;
  };
  const Case cases[] = {{"resident, written again", false, false, true},
                        {"discarded, written", true, false, true},
                        {"discarded, read", true, false, false},
                        {"discarded, prefetched, written", true, true, true},
                        {"discarded, prefetched, read", true, true, false},
                        {"resident, prefetched, written", false, true, true}};
  for (const Case& c : cases) {
    std::vector<Revived> runs;
    for (int i = 0; i < 3; ++i) runs.push_back(revive_once(d, n, c.prefetch, c.write, c.discard));
    std::sort(runs.begin(), runs.end(),
              [](const Revived& x, const Revived& y) { return x.touch_us < y.touch_us; });
    const Revived& m = runs[1];
    std::printf("%-44s %16.2f %14.2f %14.0f\n", c.name, m.prefetch_us, m.touch_us, m.bytes_in);
  }
}
} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::printf("usage: residency_probe LIB density|threshold|revive|partial|refill [BLOCKS]\n");
    return 2;
  }
  LiveDevice* d = probe::open_device(argv[1]);
  const uint64_t blocks = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 128;
  const std::string mode = argv[2];
  std::printf("device %s, up to %llu blocks\n", d->name(), static_cast<unsigned long long>(blocks));
  if (mode == "density") return density(*d, blocks), 0;
  if (mode == "revive") return revive(*d, blocks), 0;
  if (mode == "threshold") return threshold(*d, blocks), 0;
  if (mode == "partial") return partial(*d, blocks), 0;
  if (mode == "refill") return refill(*d, blocks), 0;
  std::printf("unknown mode %s: expected density, threshold, revive, partial or refill\n",
              mode.c_str());
  return 2;
}
