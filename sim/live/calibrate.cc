#include "sim/live/calibrate.h"

#include "sim/core/error.h"
#include "sim/live/calibrate_faults.h"
#include "sim/live/calibrate_grid.h"
#include "sim/run/results.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace faultline::live {
namespace {

using nlohmann::json;

Time wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Time median(std::vector<Time> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Bench {
public:
  Bench(LiveDevice& device, const CalibrationSettings& settings)
      : d_(device), settings_(settings) {}

  json run() {
    const Grid g = grid(settings_);
    json out;
    if (!settings_.from.empty()) {
      out["fault_path_from"] = fault_path_of(settings_.from);
      if (!settings_.keep_fault_path) out["fault_path_fitted"] = true;
    }
    check_memory(g);
    out["device"] = d_.name();
    out["repeats"] = settings_.repeats;
    out["cupti_counters"] = settings_.cupti_counters;
    out["faultline"] = {{"git_revision", git_revision()}};
    overhead_ = kernel_overhead();
    out["kernel_overhead_ns"] = overhead_;
    out["warm_up"] = warm_up(g.warm_up_chunks);
    json samples = json::array();
    const auto sample = [&] { samples.push_back(eviction_once(g.eviction_chunks)); };
    out["prefetch_call_ns"] = prefetch_call();
    out["replay"] = replay_pattern();
    sample();
    out["host_to_gpu"] = json::array();
    out["gpu_to_host"] = json::array();
    for (uint64_t size : g.sizes) {
      const Transfer t = transfer(size);
      out["host_to_gpu"].push_back({size, t.to_gpu});
      out["gpu_to_host"].push_back({size, t.to_host});
      out["host_populate"] = {{"bytes", size}, {"ns", t.host_populate}}; // the largest size's
    }
    sample();
    out["eviction"] = {{"chunks", g.eviction_chunks}, {"ns", eviction(g.eviction_chunks)}};
    out["prefetch_blocks"] = prefetch_blocks(g.prefetch_blocks);
    sample();
    out["swap"] = swap(g.eviction_chunks);
    out["eviction_runs"] = eviction_runs(g.eviction_chunks);
    sample();
    const uint64_t host_bytes = g.host_fault_blocks * kBlockSize;
    out["host_fault"] = {{"bytes", host_bytes}, {"ns", host_fault(host_bytes)}};
    sample();
    out["faults"] = json::array();
    for (const char* kind : {"populate", "migrate"}) {
      const Start start = kind == std::string("migrate") ? Start::kHost : Start::kFresh;
      for (const auto& [b, k] : g.fault_points)
        out["faults"].push_back({{"kind", kind},
                                 {"blocks", b},
                                 {"pages_per_block", k},
                                 {"ns", faults(start, b, k, FaultOrder::kBlock)}});
      for (const auto& [b, k] : g.strided_points)
        out["faults"].push_back({{"kind", kind},
                                 {"blocks", b},
                                 {"pages_per_block", k},
                                 {"order", fault_order_name(FaultOrder::kStrided)},
                                 {"ns", faults(start, b, k, FaultOrder::kStrided)}});
      sample();
    }
    // The fault benchmark's shapes on blocks the GPU held and a 2 MB call each evicted, as
    // `faultline run`'s budget and the replay's evict them: what a program's faults cost when
    // it takes back what the budget evicted.
    out["refaults"] = json::array();
    for (const auto& [b, k] : g.fault_points)
      if (k > 1) // a block's pages are the kernel's: the program's shape
        out["refaults"].push_back({{"blocks", b},
                                   {"pages_per_block", k},
                                   {"ns", faults(Start::kEvicted, b, k, FaultOrder::kBlock)}});
    out["discarded_touch"] = discarded_touch(g.discard_blocks);
    sample();
    out["eviction"]["samples_ns"] = samples;
    if (g.peer_sizes.empty()) return out; // per machine: the peer link stays the base's
    out["peer"] = peer(g.peer_sizes);
    if (!out["peer"].is_null()) out["peer_uvm"] = peer_uvm(g.eviction_chunks, g.host_fault_blocks);
    return out;
  }

private:
  void check_memory(const Grid& g) {
    const uint64_t largest = std::max(
        {g.sizes.back(), (largest_fault_blocks(g) + std::max(1u, settings_.repeats)) * kBlockSize,
         2 * g.eviction_chunks * kBlockSize, g.prefetch_blocks * kBlockSize,
         g.host_fault_blocks * kBlockSize, 2 * g.discard_blocks * kBlockSize,
         g.warm_up_chunks * kBlockSize});
    const uint64_t free = d_.free_bytes();
    if (largest + settings_.margin > free) {
      throw Error("faultline calibrate: refusing to run: the largest benchmark needs " +
                  std::to_string(largest) + " managed bytes and the GPU has " +
                  std::to_string(free) + " bytes free, less the margin of " +
                  std::to_string(settings_.margin) + " bytes (--margin)");
    }
  }

  static uint64_t largest_fault_blocks(const Grid& g) {
    uint64_t blocks = 0;
    for (const auto& point : g.fault_points) blocks = std::max(blocks, point.first);
    for (const auto& point : g.strided_points) blocks = std::max(blocks, point.first);
    return blocks;
  }

  [[noreturn]] void fail(const std::string& what) {
    throw Error("faultline calibrate: " + what + ": " + d_.error());
  }

  void* alloc(uint64_t bytes) {
    void* p = d_.alloc_managed(bytes);
    if (!p) fail("allocating " + std::to_string(bytes) + " managed bytes");
    d_.set_slot(0, p, bytes);
    return p;
  }

  template <typename F> Time timed(F f) {
    d_.synchronize();
    const Time start = wall_ns();
    f();
    d_.synchronize();
    return wall_ns() - start;
  }

  template <typename F> Time repeated(F f) {
    std::vector<Time> times;
    for (uint32_t i = 0; i < std::max(1u, settings_.repeats); ++i) times.push_back(f());
    return median(times);
  }

  void run_kernel(uint64_t count) {
    if (!d_.run_kernel(0, count, 0)) fail("running the touch kernel");
  }

  // Launch and wait of a kernel that touches nothing: subtracted from every kernel benchmark.
  Time kernel_overhead() {
    run_kernel(0); // warm-up: module load
    std::vector<Time> times;
    for (int i = 0; i < 21; ++i) times.push_back(timed([&] { run_kernel(0); }));
    return median(times);
  }

  // A prefetch of pages already on the GPU: the call's own cost.
  Time prefetch_call() {
    void* p = alloc(kBlockSize);
    d_.prefetch_to_gpu(p, kBlockSize);
    const Time t = repeated([&] { return timed([&] { d_.prefetch_to_gpu(p, kBlockSize); }); });
    d_.free_managed(p);
    return t;
  }

  // The replay's own rhythm, one kernel at a time on resident memory: a kernel right after a
  // drain of CUPTI's records (what `replay --faults cupti` costs each kernel; measured, not
  // fitted), and a kernel after 8, 32 and 128 2 MB prefetch calls of resident blocks (the call's
  // cost between kernels, which differs from calls in a row; pump makes tens a kernel).
  json replay_pattern() {
    constexpr uint64_t kBlocks = 64, kCalls = 8, kRounds = 51;
    void* p = alloc(kBlocks * kBlockSize);
    d_.prefetch_to_gpu(p, kBlocks * kBlockSize);
    d_.quiesce();
    const auto round = [&](bool drain, uint64_t calls) {
      std::vector<Time> times;
      for (uint64_t r = 0; r < kRounds; ++r) {
        if (drain) d_.quiesce();
        const Time start = wall_ns();
        for (uint64_t c = 0; c < calls; ++c)
          d_.prefetch_to_gpu(static_cast<char*>(p) + (r + c) % kBlocks * kBlockSize, kBlockSize);
        run_kernel(0);
        times.push_back(wall_ns() - start);
      }
      return median(times);
    };
    json out = {{"kernel_ns", round(false, 0)},
                {"after_drain_ns", round(true, 0)},
                {"prefetches", kCalls},
                {"with_prefetches_ns", round(false, kCalls)}};
    out["calls_per_kernel"] = json::array({{kCalls, out["with_prefetches_ns"]}});
    for (uint64_t calls : {4 * kCalls, 16 * kCalls})
      out["calls_per_kernel"].push_back({calls, round(false, calls)});
    d_.free_managed(p);
    return out;
  }

  struct Transfer {
    Time host_populate, to_gpu, to_host;
  };

  // The host's first writes to never-touched memory (one byte per 4 KB page, as the replay's
  // host accesses: CPU faults that populate it), then cudaMemPrefetchAsync of it to the GPU and
  // back, in one call each.
  Transfer transfer(uint64_t size) {
    std::vector<Time> populate, h2d, d2h;
    for (uint32_t i = 0; i < std::max(1u, settings_.repeats); ++i) {
      void* p = alloc(size);
      populate.push_back(timed([&] { d_.host_write(p, size); }));
      h2d.push_back(timed([&] { d_.prefetch_to_gpu(p, size); }));
      d2h.push_back(timed([&] { d_.evict_to_host(p, size); }));
      d_.free_managed(p);
    }
    return {median(populate), median(h2d), median(d2h)};
  }

  // Evictions allocate host pages, and on a virtual machine those cost up to three times more
  // while the guest's memory is cold: on a freshly started H100 instance the first 2,400
  // evictions of a replay took 520-640 us each and the rest about 190, and evictions after 100 GB
  // of host memory were freed went back to 270-290 us (experiments/live/data/h100-vm-warmup/).
  // The replays run warm, so the benchmarks after this do too: `chunks` blocks prefetched, then
  // evicted and prefetched back one 2 MB call each, kRounds times. Each round's eviction cost per
  // chunk is kept, to show how cold the machine was, and its prefetch back per chunk: what a
  // policy's prefetch of a chunk the budget evicted costs, which the prefetch_blocks benchmark's
  // host-written blocks may not show.
  json warm_up(uint64_t chunks) {
    constexpr int kRounds = 3;
    json evictions = json::array(), prefetches = json::array();
    char* p = static_cast<char*>(alloc(chunks * kBlockSize));
    d_.prefetch_to_gpu(p, chunks * kBlockSize);
    for (int r = 0; r < kRounds; ++r) {
      evictions.push_back(timed([&] {
                            for (uint64_t c = 0; c < chunks; ++c)
                              d_.evict_to_host(p + c * kBlockSize, kBlockSize);
                          }) /
                          static_cast<Time>(chunks));
      prefetches.push_back(timed([&] {
                             for (uint64_t c = 0; c < chunks; ++c)
                               d_.prefetch_to_gpu(p + c * kBlockSize, kBlockSize);
                           }) /
                           static_cast<Time>(chunks));
    }
    d_.synchronize();
    d_.free_managed(p);
    return {{"chunks", chunks},
            {"eviction_ns_per_chunk", evictions},
            {"prefetch_ns_per_chunk", prefetches}};
  }

  // GPU-resident chunks evicted one 2 MB call each, as the replay's budget evicts them.
  Time eviction(uint64_t chunks) {
    return repeated([&] { return eviction_once(chunks); });
  }

  // An eviction's cost on these machines switches between two levels (on H200s about 185 and
  // 280-310 us a chunk) within seconds: a replay's evictions pay a mix, one benchmark sees one
  // level (experiments/live/data/h200-eviction-regimes/). So besides the benchmark itself, `run`
  // takes one such eviction after each group of benchmarks, spread over the calibration; the
  // fit reports their spread (calibrate_fit.cc's eviction_spread).
  Time eviction_once(uint64_t chunks) {
    void* p = alloc(chunks * kBlockSize);
    d_.prefetch_to_gpu(p, chunks * kBlockSize);
    const Time t = timed([&] {
      for (uint64_t c = 0; c < chunks; ++c)
        d_.evict_to_host(static_cast<char*>(p) + c * kBlockSize, kBlockSize);
    });
    d_.free_managed(p);
    return t;
  }

  // Pump and the oracle at a budget make room for each block they prefetch: one GPU-resident
  // chunk evicted, one block of host data prefetched, in turn, one 2 MB call each. The fit takes
  // what a pair costs beyond the same calls made apart (all the evictions, then all the
  // prefetches; swap_extra_ns). The two are timed in alternation: an eviction's cost switches
  // between two levels within seconds, and against parts measured by the other benchmarks the
  // extra came out at 0, 66 and 7 us in three calibrations of one H100 (h100-ee8e9a35) and at
  // 78 us on an H200 whose pump runs showed none (h200-632ef450).
  json swap(uint64_t pairs) {
    std::vector<Time> in_turn, apart;
    for (uint32_t i = 0; i < std::max(3u, settings_.repeats); ++i)
      for (const bool turn : {true, false}) {
        char* a = static_cast<char*>(alloc(2 * pairs * kBlockSize));
        char* b = a + pairs * kBlockSize;
        d_.prefetch_to_gpu(a, pairs * kBlockSize);
        d_.host_write(b, pairs * kBlockSize);
        const Time t = timed([&] {
          for (uint64_t k = 0; k < pairs; ++k) {
            d_.evict_to_host(a + k * kBlockSize, kBlockSize);
            if (turn) d_.prefetch_to_gpu(b + k * kBlockSize, kBlockSize);
          }
          if (!turn)
            for (uint64_t k = 0; k < pairs; ++k) d_.prefetch_to_gpu(b + k * kBlockSize, kBlockSize);
        });
        d_.free_managed(a);
        (turn ? in_turn : apart).push_back(t);
      }
    return {{"pairs", pairs}, {"ns", median(in_turn)}, {"apart_ns", median(apart)}};
  }

  // Evicting chunks that hold several runs of pages (eviction_run_ns): `chunks` blocks of host
  // data, a kernel reading 8 of each block's 64 KB pages, the first 8 (one run) or every fourth
  // (8 runs), then the chunks evicted one 2 MB call each. The stock driver copies the runs in one
  // push: on an H200 the spread pages cost 1-7 us a run more than one run
  // (experiments/live/data/h200-c9770d01/partial-evict.txt), not a copy's overhead each. The
  // two cases alternate, as the swap's, against the eviction's two levels. A third case, the
  // same 8 pages written by the kernel in never-touched memory, prices an eviction that
  // populates the chunk's other pages on the host (eviction_populate_ns: 350-530 us a chunk more
  // on H200s, experiments/live/data/h200-d5a16a75/refill.txt).
  json eviction_runs(uint64_t chunks) {
    constexpr uint32_t kRuns = 8;
    enum Case { kFirst, kSpread, kFresh };
    std::vector<Touch> touches;
    for (const Case c : {kFirst, kSpread, kFresh})
      for (uint64_t b = 0; b < chunks; ++b)
        for (uint32_t i = 0; i < kRuns; ++i)
          touches.push_back(
              {c == kFresh ? 1u : 0u, // written: populated on the GPU
               static_cast<uint32_t>(b * kBigPagesPerBlock +
                                     i * (c == kSpread ? kBigPagesPerBlock / kRuns : 1u))});
    if (!d_.upload_touches(touches.data(), touches.size())) fail("uploading touches");
    const uint64_t each = chunks * kRuns;
    std::vector<Time> times[3];
    for (uint32_t i = 0; i < std::max(3u, settings_.repeats); ++i)
      for (const Case c : {kFirst, kSpread, kFresh}) {
        auto* p = static_cast<char*>(alloc(chunks * kBlockSize));
        if (c != kFresh) d_.host_write(p, chunks * kBlockSize);
        if (!d_.run_kernel(c * each, each, 0)) fail("running the touch kernel");
        const Time t = timed([&] {
          for (uint64_t b = 0; b < chunks; ++b) d_.evict_to_host(p + b * kBlockSize, kBlockSize);
        });
        d_.free_managed(p);
        times[c].push_back(t);
      }
    return {{"chunks", chunks},
            {"runs", kRuns},
            {"first_ns", median(times[kFirst])},
            {"spread_ns", median(times[kSpread])},
            {"fresh_ns", median(times[kFresh])}};
  }

  // Prefetches one 2 MB call per block, as the replay issues them, of blocks already on the GPU,
  // unpopulated, and on the host.
  json prefetch_blocks(uint64_t blocks) {
    json out = {{"blocks", blocks}};
    for (const char* kind : {"resident", "populate", "migrate"}) {
      const std::string k = kind;
      out[k + "_ns"] = repeated([&] {
        void* p = alloc(blocks * kBlockSize);
        if (k == "resident") d_.prefetch_to_gpu(p, blocks * kBlockSize);
        if (k == "migrate") d_.host_write(p, blocks * kBlockSize);
        const Time t = timed([&] {
          for (uint64_t b = 0; b < blocks; ++b)
            d_.prefetch_to_gpu(static_cast<char*>(p) + b * kBlockSize, kBlockSize);
        });
        d_.free_managed(p);
        return t;
      });
    }
    return out;
  }

  // The CPU writing GPU-resident pages: CPU faults pull them back.
  Time host_fault(uint64_t bytes) {
    return repeated([&] {
      void* p = alloc(bytes);
      d_.prefetch_to_gpu(p, bytes);
      const Time t = timed([&] { d_.host_write(p, bytes); });
      d_.free_managed(p);
      return t;
    });
  }

  // Where a fault benchmark's pages start: never touched, written by the host, or written by the
  // host, prefetched to the GPU and evicted back one 2 MB call a block.
  enum class Start { kFresh, kHost, kEvicted };

  // One kernel touching `k` evenly spread 64 KB big pages in each of `blocks` 2 MB blocks that are
  // unpopulated (populate) or on the host (migrate), in `order`; the launch overhead is taken off.
  // Just before it, a kernel faults one fresh page of a scratch allocation: in a workload faults
  // follow kernels, while a fault path left idle (here, while the benchmark allocates) costs up to
  // some hundred microseconds more on its next batch (experiments/live/data/probes/h200.txt,
  // first-touch cases).
  Time faults(Start start, uint64_t blocks, uint64_t k, FaultOrder order) {
    const uint32_t repeats = std::max(1u, settings_.repeats);
    std::vector<Touch> touches;
    for (uint64_t page : fault_touches(blocks, k, order))
      touches.push_back({0, static_cast<uint32_t>(page)});
    const uint64_t count = touches.size();
    for (uint32_t i = 0; i < repeats; ++i) touches.push_back({1u << 2, i * kBigPagesPerBlock});
    if (!d_.upload_touches(touches.data(), touches.size())) fail("uploading touches");
    void* scratch = d_.alloc_managed(repeats * kBlockSize);
    if (!scratch) fail("allocating the warm-up's scratch memory");
    d_.set_slot(1, scratch, repeats * kBlockSize);
    uint64_t warm_up = count;
    const Time t = repeated([&] {
      void* p = alloc(blocks * kBlockSize);
      if (start != Start::kFresh) d_.host_write(p, blocks * kBlockSize);
      if (start == Start::kEvicted) {
        d_.prefetch_to_gpu(p, blocks * kBlockSize);
        for (uint64_t b = 0; b < blocks; ++b)
          d_.evict_to_host(static_cast<char*>(p) + b * kBlockSize, kBlockSize);
        d_.synchronize();
      }
      if (!d_.run_kernel(warm_up++, 1, 0)) fail("running the warm-up kernel");
      const Time t = timed([&] { run_kernel(count); });
      d_.free_managed(p);
      return std::max<Time>(0, t - overhead_);
    });
    d_.free_managed(scratch);
    return t;
  }

  // Faults on pages a policy discarded while they held data, as DeepUM drops freed allocator
  // blocks (experiments/live/data/h200-migration-mix/): `blocks` blocks written by a kernel, the
  // first half of each discarded in one call, the other half left on the GPU ("resident") or
  // evicted ("evicted"), or the whole block evicted by one call over the discarded half too
  // ("covered", as `faultline run` evicts a block a policy discarded part of); then one kernel
  // writes the discarded halves. "fresh": the same kernel on never-touched halves. The launch
  // overhead is taken off.
  json discarded_touch(uint64_t blocks) {
    const uint32_t half = kBigPagesPerBlock / 2;
    std::vector<Touch> touches;
    for (uint32_t page = 0; page < blocks * kBigPagesPerBlock; ++page) touches.push_back({1, page});
    const uint64_t whole = touches.size();
    for (uint32_t b = 0; b < blocks; ++b)
      for (uint32_t page = 0; page < half; ++page)
        touches.push_back({1, b * kBigPagesPerBlock + page});
    const uint64_t halves = touches.size() - whole;
    if (!d_.upload_touches(touches.data(), touches.size())) fail("uploading touches");
    json out = {{"blocks", blocks}, {"pages", halves}};
    for (const std::string start : {"fresh", "resident", "evicted", "covered"}) {
      out[start + "_ns"] = repeated([&] {
        auto* p = static_cast<char*>(alloc(blocks * kBlockSize));
        run_kernel(whole); // also the fresh case's warm-up: an idle fault path costs more
        if (start == "fresh") {
          d_.free_managed(p);
          p = static_cast<char*>(alloc(blocks * kBlockSize));
        }
        for (uint64_t b = 0; start != "fresh" && b < blocks; ++b) {
          char* block = p + b * kBlockSize;
          d_.discard(block, kBlockSize / 2);
          if (start == "evicted") d_.evict_to_host(block + kBlockSize / 2, kBlockSize / 2);
          if (start == "covered") d_.evict_to_host(block, kBlockSize);
        }
        d_.synchronize();
        const Time t = timed([&] {
          if (!d_.run_kernel(whole, halves, 0)) fail("running the touch kernel");
        });
        d_.free_managed(p);
        return std::max<Time>(0, t - overhead_);
      });
    }
    // The eviction calls themselves: of the halves left on the GPU ("evicted"), or over the whole
    // blocks, the discarded halves too ("covered", as `faultline run` evicts a chunk a policy
    // discarded part of): what covering discarded pages adds to an eviction.
    for (const std::string start : {"evicted", "covered"}) {
      out["evict_" + start + "_ns"] = repeated([&] {
        auto* p = static_cast<char*>(alloc(blocks * kBlockSize));
        run_kernel(whole);
        for (uint64_t b = 0; b < blocks; ++b) d_.discard(p + b * kBlockSize, kBlockSize / 2);
        d_.synchronize();
        const Time t = timed([&] {
          for (uint64_t b = 0; b < blocks; ++b) {
            char* block = p + b * kBlockSize;
            if (start == "evicted") d_.evict_to_host(block + kBlockSize / 2, kBlockSize / 2);
            if (start == "covered") d_.evict_to_host(block, kBlockSize);
          }
        });
        d_.free_managed(p);
        return t;
      });
    }
    // A prefetch of the discarded halves (one call a block, the other halves on the GPU; for
    // "covered" the whole block evicted by one call after the discard), as the schedule policy
    // brings back pages it discarded, against the same calls on halves never touched.
    for (const std::string start : {"fresh", "discarded", "covered"}) {
      out["prefetch_" + start + "_ns"] = repeated([&] {
        auto* p = static_cast<char*>(alloc(blocks * kBlockSize));
        run_kernel(whole);
        if (start == "fresh") {
          d_.free_managed(p);
          p = static_cast<char*>(alloc(blocks * kBlockSize));
        }
        for (uint64_t b = 0; start != "fresh" && b < blocks; ++b) {
          d_.discard(p + b * kBlockSize, kBlockSize / 2);
          if (start == "covered") d_.evict_to_host(p + b * kBlockSize, kBlockSize);
        }
        const Time t = timed([&] {
          for (uint64_t b = 0; b < blocks; ++b)
            d_.prefetch_to_gpu(p + b * kBlockSize, kBlockSize / 2);
        });
        d_.free_managed(p);
        return t;
      });
    }
    return out;
  }

  json peer(const std::vector<uint64_t>& sizes) {
    if (!d_.peer_copy(sizes.front(), true)) { // also the warm-up
      if (*d_.error()) fail("copying between GPUs");
      return nullptr; // one GPU
    }
    json out = {{"forward", json::array()}, {"reverse", json::array()}};
    for (uint64_t size : sizes) {
      for (bool forward : {true, false}) {
        const Time t = repeated([&] {
          return timed([&] {
            if (!d_.peer_copy(size, forward)) fail("copying between GPUs");
          });
        });
        out[forward ? "forward" : "reverse"].push_back({size, t});
      }
    }
    return out;
  }

  // UVM between the GPUs: GPU-resident chunks moved to the next GPU one 2 MB call each (an
  // eviction to a neighbour), and one kernel faulting every page of blocks that sit on the next
  // GPU, against the same kernel on host-resident blocks.
  json peer_uvm(uint64_t chunks, uint64_t blocks) {
    const uint64_t largest = std::max(chunks, blocks) * kBlockSize;
    if (largest + settings_.margin > d_.peer_free_bytes())
      throw Error("faultline calibrate: refusing the peer benchmarks: they need " +
                  std::to_string(largest) + " bytes on the next GPU, which has " +
                  std::to_string(d_.peer_free_bytes()) + " free, less the margin");
    json out;
    out["eviction"] = {{"chunks", chunks},
                       {"ns", repeated([&] {
                          void* p = alloc(chunks * kBlockSize);
                          d_.prefetch_to_gpu(p, chunks * kBlockSize);
                          const Time t = timed([&] {
                            for (uint64_t c = 0; c < chunks; ++c)
                              d_.prefetch_to_peer(static_cast<char*>(p) + c * kBlockSize,
                                                  kBlockSize);
                          });
                          d_.free_managed(p);
                          return t;
                        })}};
    std::vector<Touch> touches;
    for (uint32_t page = 0; page < blocks * kBigPagesPerBlock; ++page) touches.push_back({0, page});
    if (!d_.upload_touches(touches.data(), touches.size())) fail("uploading touches");
    const auto dense = [&](bool on_peer) {
      return repeated([&] {
        void* p = alloc(blocks * kBlockSize);
        d_.host_write(p, blocks * kBlockSize);
        if (on_peer) d_.prefetch_to_peer(p, blocks * kBlockSize);
        const Time t = timed([&] { run_kernel(touches.size()); });
        d_.free_managed(p);
        return std::max<Time>(0, t - overhead_);
      });
    };
    out["faults"] = {{"blocks", blocks},
                     {"pages_per_block", kBigPagesPerBlock},
                     {"peer_ns", dense(true)},
                     {"host_ns", dense(false)}};
    return out;
  }

  LiveDevice& d_;
  const CalibrationSettings& settings_;
  Time overhead_ = 0;
};

} // namespace

json measure(LiveDevice& device, const CalibrationSettings& settings) {
  return Bench(device, settings).run();
}

} // namespace faultline::live
