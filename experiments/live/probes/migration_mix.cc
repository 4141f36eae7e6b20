// Issue 21, items 3 and the DeepUM miss: what the replay's migration calls cost in the orders its
// policies issue them, against the calibration's calls of one kind in a row. Pump and the oracle
// at a budget evict one chunk and prefetch one block in turn on one stream; DeepUM discards parts
// of chunks, evicts the rest and later touches the discarded pages. The simulator prices each
// call alone (configs/gpus/*.json), so a mix that costs more than its parts is time it misses.
//   build/probes/migration_mix LIB [BLOCKS] [REPEATS] [bytes|density|evict|whole]
//   (whole: only the wholly discarded cases and the touches they compare with)
//   build/probes/migration_mix LIB 0 0 warm GB
// LIB: .dev/lib/libfaultline_live.so, the replay's device.
// One line per case: microseconds per unit (block, pair or page) with the CPU's time inside the
// calls, medians over the repeats. Every allocation is checked against the GPU's free memory.
#include "experiments/live/probes/probe_device.h"

#include <algorithm>
#include <functional>
#include <string>
#include <sys/mman.h>
#include <vector>

using namespace faultline::live;
using probe::now_ns;

namespace {
constexpr uint64_t kBlock = 2 << 20;
constexpr uint32_t kPages = 32; // 64 KB big pages a block
constexpr uint64_t kPage = kBlock / kPages;

struct Timing {
  double issue_us = 0, total_us = 0;
};

class Mix {
public:
  Mix(LiveDevice& d, uint64_t blocks) : d_(d), n_(blocks) {}

  // Two regions of n_ blocks, A in slot 0 and B in slot 1, set up by `prepare`; `body` is timed
  // from its first call to the GPU's idle, with `issue` the part before the final wait.
  Timing run(const std::function<void(char*, char*)>& prepare,
             const std::function<void(char*, char*)>& body, uint64_t units) {
    if (2 * n_ * kBlock + (1ull << 30) > d_.free_bytes())
      std::exit((std::printf("refusing: %llu blocks twice do not fit the GPU's free memory\n",
                             static_cast<unsigned long long>(n_)),
                 1));
    auto* a = static_cast<char*>(d_.alloc_managed(n_ * kBlock));
    auto* b = static_cast<char*>(d_.alloc_managed(n_ * kBlock));
    if (!a || !b) std::exit((std::printf("alloc failed: %s\n", d_.error()), 1));
    d_.set_slot(0, a, n_ * kBlock);
    d_.set_slot(1, b, n_ * kBlock);
    prepare(a, b);
    d_.synchronize();
    const int64_t t0 = now_ns();
    body(a, b);
    const int64_t t1 = now_ns();
    d_.synchronize();
    const int64_t t2 = now_ns();
    d_.free_managed(a);
    d_.free_managed(b);
    return {(t1 - t0) / 1e3 / units, (t2 - t0) / 1e3 / units};
  }

  // Writes of pages [lo, hi) of every block of region `slot`, uploaded for run_touches (an
  // upload frees and allocates, which waits for the GPU: never inside a timed body).
  uint64_t upload(uint32_t slot, uint32_t lo, uint32_t hi, bool write = true) {
    std::vector<Touch> t;
    for (uint64_t b = 0; b < n_; ++b)
      for (uint32_t p = lo; p < hi; ++p)
        t.push_back({slot << 2 | (write ? 1u : 0u), static_cast<uint32_t>(b * kPages + p)});
    if (!d_.upload_touches(t.data(), t.size()))
      std::exit((std::printf("uploading touches failed: %s\n", d_.error()), 1));
    return t.size();
  }
  void run_touches(uint64_t first, uint64_t count) {
    if (!d_.run_kernel(first, count, 0))
      std::exit((std::printf("touch kernel failed: %s\n", d_.error()), 1));
  }
  void touch(uint32_t slot, uint32_t lo, uint32_t hi, bool write = true) {
    run_touches(0, upload(slot, lo, hi, write));
  }

  // How region A's chunks came onto the GPU before a case evicts or discards them.
  enum class Arrival {
    kKernelWritten,     // a kernel's writes faulted them in (first touch)
    kPrefetched,        // a prefetch of unpopulated memory, never touched after
    kPrefetchedWritten, // the same, then written by a kernel
    kHostPrefetched,    // written by the host, then prefetched
    kHostRead,          // written by the host, then faulted in by a kernel's reads
    kWrittenRoundTrip,  // kernel-written, evicted whole, prefetched back (pump's steady state)
    kKernelRead,        // a kernel's reads faulted them in (first touch, never written)
  };
  static const char* name(Arrival a) {
    const char* names[] = {"kernel-written",     "prefetched",
                           "prefetched+written", "host-written+prefetched",
                           "host-written+read",  "kernel-written+evicted+prefetched",
                           "kernel-read"};
    return names[static_cast<int>(a)];
  }
  void arrive(char* a, Arrival how) {
    const uint64_t bytes = n_ * kBlock;
    switch (how) {
    case Arrival::kKernelWritten:
      touch(0, 0, kPages);
      break;
    case Arrival::kPrefetched:
      d_.prefetch_to_gpu(a, bytes);
      break;
    case Arrival::kPrefetchedWritten:
      d_.prefetch_to_gpu(a, bytes);
      touch(0, 0, kPages);
      break;
    case Arrival::kHostPrefetched:
      d_.host_write(a, bytes);
      d_.prefetch_to_gpu(a, bytes);
      break;
    case Arrival::kHostRead:
      d_.host_write(a, bytes);
      touch(0, 0, kPages, false);
      break;
    case Arrival::kKernelRead:
      touch(0, 0, kPages, false);
      break;
    case Arrival::kWrittenRoundTrip:
      touch(0, 0, kPages);
      d_.evict_to_host(a, bytes);
      d_.prefetch_to_gpu(a, bytes);
      break;
    }
    d_.synchronize();
  }

  LiveDevice& d_;
  const uint64_t n_;
};

struct Case {
  std::string name, unit;
  std::function<Timing(Mix&)> run;
};

// Region A's n chunks brought to the GPU as `how` says, then evicted one 2 MB call each.
Timing evict_after(Mix& m, Mix::Arrival how, uint64_t n) {
  return m.run([&](char* a, char*) { m.arrive(a, how); },
               [&](char* a, char*) {
                 for (uint64_t i = 0; i < n; ++i) m.d_.evict_to_host(a + i * kBlock, kBlock);
               },
               n);
}

std::vector<Case> cases(uint64_t n) {
  std::vector<Case> out;
  // The calibration's benchmarks: one kind of call in a row.
  out.push_back({"prefetch host-written", "block", [=](Mix& m) {
                   return m.run([&](char*, char* b) { m.d_.host_write(b, n * kBlock); },
                                [&](char*, char* b) {
                                  for (uint64_t i = 0; i < n; ++i)
                                    m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                                },
                                n);
                 }});
  out.push_back({"prefetch evicted before", "block", [=](Mix& m) {
                   return m.run(
                       [&](char*, char* b) {
                         m.touch(1, 0, kPages);
                         m.d_.evict_to_host(b, n * kBlock);
                       },
                       [&](char*, char* b) {
                         for (uint64_t i = 0; i < n; ++i)
                           m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                       },
                       n);
                 }});
  using Arrival = Mix::Arrival;
  const Arrival all[] = {Arrival::kKernelWritten,     Arrival::kPrefetched,
                         Arrival::kPrefetchedWritten, Arrival::kHostPrefetched,
                         Arrival::kHostRead,          Arrival::kWrittenRoundTrip};
  for (const Arrival how : all)
    out.push_back({std::string("evict ") + Mix::name(how), "chunk",
                   [=](Mix& m) { return evict_after(m, how, n); }});
  // Pump asks for every argument block at each launch, most of them on the GPU already: calls
  // that move nothing, alone and each round behind one call that moves a block (against
  // "prefetch host-written", the difference is the held calls' cost under load).
  for (const uint64_t held : {8ull, 32ull})
    for (const bool moving : {false, true})
      out.push_back(
          {std::string(moving ? "1 moving + " : "") + std::to_string(held) + " held prefetches",
           "round", [=](Mix& m) {
             return m.run(
                 [&](char* a, char* b) {
                   m.d_.prefetch_to_gpu(a, n * kBlock);
                   m.d_.host_write(b, n * kBlock);
                 },
                 [&](char* a, char* b) {
                   for (uint64_t i = 0; i < n; ++i) {
                     if (moving) m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                     for (uint64_t j = 0; j < held; ++j)
                       m.d_.prefetch_to_gpu(a + (i + j) % n * kBlock, kBlock);
                   }
                 },
                 n);
           }});
  // Pump and the oracle at a budget: evict a chunk, prefetch a block, in turn.
  out.push_back({"swap: evict one, prefetch one", "pair", [=](Mix& m) {
                   return m.run(
                       [&](char*, char* b) {
                         m.touch(0, 0, kPages);
                         m.d_.host_write(b, n * kBlock);
                       },
                       [&](char* a, char* b) {
                         for (uint64_t i = 0; i < n; ++i) {
                           m.d_.evict_to_host(a + i * kBlock, kBlock);
                           m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                         }
                       },
                       n);
                 }});
  // Pump at a budget makes room for a kernel's arguments by evicting blocks it prefetched a
  // moment before (its own earliest ones last): prefetch block i, evict block i - w.
  for (const uint64_t w : {1ull, 4ull, 32ull})
    out.push_back({"prefetch i, evict i-" + std::to_string(w), "pair", [=](Mix& m) {
                     return m.run([&](char*, char* b) { m.d_.host_write(b, n * kBlock); },
                                  [&](char*, char* b) {
                                    for (uint64_t i = 0; i < n; ++i) {
                                      m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                                      if (i >= w) m.d_.evict_to_host(b + (i - w) * kBlock, kBlock);
                                    }
                                  },
                                  n);
                   }});
  out.push_back({"evict i, prefetch it back", "pair", [=](Mix& m) {
                   return m.run([&](char* a, char*) { m.arrive(a, Mix::Arrival::kKernelWritten); },
                                [&](char* a, char*) {
                                  for (uint64_t i = 0; i < n; ++i) {
                                    m.d_.evict_to_host(a + i * kBlock, kBlock);
                                    m.d_.prefetch_to_gpu(a + i * kBlock, kBlock);
                                  }
                                },
                                n);
                 }});
  for (const uint64_t k : {8ull, 64ull})
    out.push_back({"swap " + std::to_string(k) + ", then a kernel on them", "pair", [=](Mix& m) {
                     return m.run(
                         [&](char*, char* b) {
                           m.touch(0, 0, kPages);
                           m.d_.host_write(b, n * kBlock);
                           m.upload(1, 0, kPages);
                         },
                         [&](char* a, char* b) {
                           for (uint64_t r = 0; r + k <= n; r += k) {
                             for (uint64_t i = r; i < r + k; ++i) {
                               m.d_.evict_to_host(a + i * kBlock, kBlock);
                               m.d_.prefetch_to_gpu(b + i * kBlock, kBlock);
                             }
                             m.run_touches(r * kPages, k * kPages);
                           }
                         },
                         n / k * k);
                   }});
  // DeepUM: the touched half of each chunk discarded, then (or not) the rest evicted as the
  // replay's runs skip discarded pages, then a kernel writes the discarded half.
  for (const Arrival how : {Arrival::kKernelWritten, Arrival::kPrefetched,
                            Arrival::kPrefetchedWritten, Arrival::kHostRead})
    for (const int evict : {0, 1, 2})
      out.push_back({std::string("touch discarded half of ") + Mix::name(how) +
                         (evict == 1   ? ", rest evicted"
                          : evict == 2 ? ", whole evicted first"
                                       : ""),
                     "page", [=](Mix& m) {
                       return m.run(
                           [&](char* a, char*) {
                             m.arrive(a, how);
                             for (uint64_t i = 0; i < n; ++i) {
                               if (evict == 2) m.d_.evict_to_host(a + i * kBlock, kBlock);
                               m.d_.discard(a + i * kBlock, kBlock / 2);
                               if (evict == 1)
                                 m.d_.evict_to_host(a + i * kBlock + kBlock / 2, kBlock / 2);
                             }
                             m.upload(0, 0, kPages / 2);
                           },
                           [&](char*, char*) { m.run_touches(0, n * kPages / 2); }, n * kPages / 2);
                     }});
  // DeepUM drops whole freed blocks too: every page of each chunk discarded, then a kernel
  // writes all of them or half.
  for (const Arrival how : {Arrival::kKernelWritten, Arrival::kPrefetchedWritten})
    for (const uint32_t touched : {kPages, kPages / 2})
      out.push_back({std::string("touch wholly discarded ") + Mix::name(how) +
                         (touched == kPages ? ", all pages" : ", half"),
                     "page", [=](Mix& m) {
                       return m.run(
                           [&](char* a, char*) {
                             m.arrive(a, how);
                             for (uint64_t i = 0; i < n; ++i) m.d_.discard(a + i * kBlock, kBlock);
                             m.upload(0, 0, touched);
                           },
                           [&](char*, char*) { m.run_touches(0, n * touched); }, n * touched);
                     }});
  out.push_back({"touch evicted half (no discard)", "page", [=](Mix& m) {
                   return m.run(
                       [&](char* a, char*) {
                         m.touch(0, 0, kPages);
                         m.d_.evict_to_host(a, n * kBlock);
                         m.upload(0, 0, kPages / 2);
                       },
                       [&](char*, char*) { m.run_touches(0, n * kPages / 2); }, n * kPages / 2);
                 }});
  out.push_back({"touch fresh half", "page", [=](Mix& m) {
                   return m.run([&](char*, char*) { m.upload(0, 0, kPages / 2); },
                                [&](char*, char*) { m.run_touches(0, n * kPages / 2); },
                                n * kPages / 2);
                 }});
  // Discards of one 64 KB page at a time, as DeepUM drops small freed blocks.
  out.push_back({"discard page by page, rest evicted, touch", "page", [=](Mix& m) {
                   return m.run(
                       [&](char* a, char*) {
                         m.touch(0, 0, kPages);
                         for (uint64_t i = 0; i < n; ++i) {
                           for (uint32_t p = 0; p < kPages / 2; ++p)
                             m.d_.discard(a + i * kBlock + p * kPage, kPage);
                           m.d_.evict_to_host(a + i * kBlock + kBlock / 2, kBlock / 2);
                         }
                         m.upload(0, 0, kPages / 2);
                       },
                       [&](char*, char*) { m.run_touches(0, n * kPages / 2); }, n * kPages / 2);
                 }});
  return out;
}
} // namespace

// Issue 21 item 4: the bytes an eviction copies back (CUPTI's counters), per chunk, by how the
// chunk came to the GPU: the simulator writes back every resident page.
void bytes_back(LiveDevice& d, Mix& m, uint64_t n) {
  using A = Mix::Arrival;
  std::printf("bytes per 2 MB chunk evicted (and brought in before), by arrival\n");
  for (const A how : {A::kKernelWritten, A::kKernelRead, A::kPrefetched, A::kPrefetchedWritten,
                      A::kHostPrefetched, A::kHostRead, A::kWrittenRoundTrip}) {
    auto* a = static_cast<char*>(d.alloc_managed(n * kBlock));
    if (!a) std::exit((std::printf("alloc failed: %s\n", d.error()), 1));
    d.set_slot(0, a, n * kBlock);
    const Counters c0 = d.counters();
    m.arrive(a, how);
    const Counters c1 = d.counters();
    for (uint64_t i = 0; i < n; ++i) d.evict_to_host(a + i * kBlock, kBlock);
    d.synchronize();
    const Counters c2 = d.counters();
    d.free_managed(a);
    std::printf("%-44s in %9.0f  back %9.0f\n", Mix::name(how),
                double(c1.bytes_host_to_gpu - c0.bytes_host_to_gpu) / n,
                double(c2.bytes_gpu_to_host - c1.bytes_gpu_to_host) / n);
  }
}

// What the driver brings beside a kernel's faults: k of each block's 32 pages touched (the
// first k), on never-touched blocks (pages populated: the eviction's bytes) and on host data
// (pages migrated: the bytes in). The simulator's density prefetcher populates the rest of a
// dense region in both cases.
void density(LiveDevice& d, Mix& m, uint64_t n) {
  std::printf("pages per block beside k touched: populated (fresh) / migrated in (host data)\n");
  for (const uint32_t k : {1u, 8u, 16u, 17u, 24u, 31u}) {
    double pages[2] = {};
    for (const bool host : {false, true}) {
      auto* a = static_cast<char*>(d.alloc_managed(n * kBlock));
      if (!a) std::exit((std::printf("alloc failed: %s\n", d.error()), 1));
      d.set_slot(0, a, n * kBlock);
      if (host) d.host_write(a, n * kBlock);
      const Counters c0 = d.counters();
      m.touch(0, 0, k, false);
      const Counters c1 = d.counters();
      for (uint64_t i = 0; i < n; ++i) d.evict_to_host(a + i * kBlock, kBlock);
      d.synchronize();
      const Counters c2 = d.counters();
      d.free_managed(a);
      const uint64_t bytes = host ? c1.bytes_host_to_gpu - c0.bytes_host_to_gpu
                                  : c2.bytes_gpu_to_host - c1.bytes_gpu_to_host;
      pages[host] = double(bytes) / n / kPage;
    }
    std::printf("k=%-2u  populated %5.1f  migrated %5.1f\n", k, pages[0], pages[1]);
  }
}

// Eviction by arrival, every repeat printed in order (not their median): whether a fresh machine's
// first evictions cost more than its later ones (issue 21 items 3 and 7).
void evict_repeats(Mix& m, uint64_t n, int repeats) {
  using A = Mix::Arrival;
  std::printf("eviction us per chunk by arrival, repeats in order\n");
  for (const A how :
       {A::kKernelWritten, A::kPrefetched, A::kPrefetchedWritten, A::kHostPrefetched}) {
    std::printf("%-40s", Mix::name(how));
    for (int r = 0; r < repeats; ++r) {
      std::printf(" %7.1f", evict_after(m, how, n).total_us);
    }
    std::printf("\n");
  }
}

// Writes one byte in every 4 KB page of GB gigabytes of anonymous host memory, twice (a fresh
// mapping each time): a virtual machine's first touch of guest memory can cost far more than a
// later one, and evictions allocate host pages.
void warm_host(uint64_t gb) {
  const uint64_t bytes = gb << 30;
  for (int pass = 1; pass <= 2; ++pass) {
    const int64_t t0 = now_ns();
    auto* p = static_cast<char*>(
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED)
      std::exit((std::printf("mmap of %llu GB failed\n", (unsigned long long)gb), 1));
    for (uint64_t off = 0; off < bytes; off += 4096) p[off] = 1;
    const int64_t t1 = now_ns();
    munmap(p, bytes);
    std::printf("warm pass %d: %llu GB touched in %.2f s (%.2f GB/s)\n", pass,
                (unsigned long long)gb, (t1 - t0) / 1e9, gb / ((t1 - t0) / 1e9));
  }
}

int main(int argc, char** argv) {
  if (argc > 5 && std::string(argv[4]) == "warm")
    return warm_host(std::strtoull(argv[5], nullptr, 10)), 0;
  LiveDevice* d = probe::open_device(argc > 1 ? argv[1] : "build-gpu/libfaultline_live.so");
  const uint64_t blocks = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  Mix mix(*d, blocks);
  if (argc > 4 && std::string(argv[4]) == "bytes") return bytes_back(*d, mix, blocks), 0;
  if (argc > 4 && std::string(argv[4]) == "density") return density(*d, mix, blocks), 0;
  if (argc > 4 && std::string(argv[4]) == "evict") return evict_repeats(mix, blocks, repeats), 0;
  std::printf("device %s, %llu blocks, %d repeats; us per unit: CPU in the calls / total\n",
              d->name(), static_cast<unsigned long long>(blocks), repeats);
  // "whole": the wholly discarded cases and the two they compare with, alone.
  const bool whole = argc > 4 && std::string(argv[4]) == "whole";
  for (const Case& c : cases(blocks)) {
    if (whole && c.name.find("wholly") == std::string::npos && c.name != "touch fresh half" &&
        c.name != "touch discarded half of kernel-written" &&
        c.name != "touch discarded half of kernel-written, rest evicted")
      continue;
    std::vector<Timing> t;
    for (int r = 0; r < repeats; ++r) t.push_back(c.run(mix));
    const auto median = [&](double Timing::*f) {
      std::vector<double> v;
      for (const Timing& x : t) v.push_back(x.*f);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%-44s %-6s %9.1f %9.1f\n", c.name.c_str(), c.unit.c_str(),
                median(&Timing::issue_us), median(&Timing::total_us));
  }
  return 0;
}
