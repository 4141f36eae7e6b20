// Issue 21, DeepUM's live time: with discards, live DeepUM takes 2x its time without them
// (resnet50 at 75%: 11.5 s against 5.9 s, experiments/live/data/h200-d6c7c532-deepum/), and the
// extra sits in kernels that the replay's books say fault on nothing: elementwise kernels
// writing pages that DeepUM discarded and that kernels only read since (303 ms for 3,135 pages),
// or that were evicted and read back since. The simulator charges a discarded page's cost once,
// at its first touch after the discard. This probe times a kernel writing pages with each of
// those histories, with the replay's own touch kernel and calls:
//   build/probes/discard_history LIB [BLOCKS]   (default 256)
// LIB: .dev/lib/libfaultline_live.so. In each 2 MB block the first half of the pages ("A") has
// the history and the second half stays on the GPU, as DeepUM discards the freed parts of
// blocks that also hold live tensors. One line per history: each step's time, and the last
// step's microseconds per 64 KB page, medians of 3. Every allocation is checked against free
// memory.
#include "experiments/live/probes/probe_device.h"
#include "sim/core/types.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace faultline::live;
using faultline::kBigPagesPerBlock;
using faultline::kBlockSize;
using probe::now_ns;

namespace {

constexpr uint64_t kHalf = kBigPagesPerBlock / 2;

// A history: steps on the A pages, in order. R/W: a kernel reading or writing them; D: one
// discard call per block for them; E: one eviction call per block, whole blocks (DeepUM's
// victims); H: one eviction call per block for the other half (the calibration's "evicted"
// case); P: one prefetch call per block for them. Lower case: the whole block, A and B
// (w: a kernel writing all its pages, d: one discard call for all of it).
struct History {
  const char* name;
  const char* steps;
};

const History kHistories[] = {
    {"fresh", "W"},
    {"written", "WW"},
    {"discard-write", "WDW"},
    {"discard-read", "WDR"},
    {"discard-read-write", "WDRW"},
    {"discard-read-read-write", "WDRRW"},
    {"discard-evict-read-write", "WDERW"},
    {"evict-read-write", "WERW"},
    {"discard-write-evict-read-write", "WDWERW"},
    {"discard-prefetch-read-write", "WDPRW"},
    {"discard-evict-write", "WDEW"},
    {"discard-evict-other-half-write", "WDHW"},
    {"whole: write, discard, write", "wdw"},
    {"whole: write, discard, evict, write", "wdEw"},
};

class Probe {
public:
  explicit Probe(LiveDevice& d, uint64_t blocks) : d_(d), blocks_(blocks) {
    const uint64_t bytes = blocks * kBlockSize;
    if (bytes + kBlockSize + (2ull << 30) > d_.free_bytes())
      std::exit((std::printf("refusing: %llu blocks do not fit the GPU's free memory\n",
                             static_cast<unsigned long long>(blocks)),
                 1));
    // The A pages read, then written; the B pages written; the scratch page.
    for (uint32_t type : {0u, 1u})
      for (uint64_t b = 0; b < blocks; ++b)
        for (uint64_t q = 0; q < kHalf; ++q)
          touches_.push_back({type, static_cast<uint32_t>(b * kBigPagesPerBlock + q)});
    for (uint64_t b = 0; b < blocks; ++b)
      for (uint64_t q = kHalf; q < kBigPagesPerBlock; ++q)
        touches_.push_back({1u, static_cast<uint32_t>(b * kBigPagesPerBlock + q)});
    touches_.push_back({1u << 2, 0});
    if (!d_.upload_touches(touches_.data(), touches_.size())) fail("uploading touches");
  }

  // Each step's time in ns, the B pages written before the first.
  std::vector<int64_t> run(const char* steps) {
    void* scratch = d_.alloc_managed(kBlockSize);
    p_ = static_cast<char*>(d_.alloc_managed(blocks_ * kBlockSize));
    if (!scratch || !p_) fail("allocating");
    d_.set_slot(0, p_, blocks_ * kBlockSize);
    d_.set_slot(1, scratch, kBlockSize);
    const uint64_t n = blocks_ * kHalf;
    kernel(2 * n, n); // B
    std::vector<int64_t> out;
    for (const char* s = steps; *s; ++s) {
      kernel(touches_.size() - 1, 1); // the fault path warmed up
      d_.synchronize();
      const int64_t t0 = now_ns();
      for (uint64_t b = 0; b < blocks_; ++b) {
        char* block = p_ + b * kBlockSize;
        if (*s == 'D') d_.discard(block, kBlockSize / 2);
        if (*s == 'E') d_.evict_to_host(block, kBlockSize);
        if (*s == 'H') d_.evict_to_host(block + kBlockSize / 2, kBlockSize / 2);
        if (*s == 'd') d_.discard(block, kBlockSize);
        if (*s == 'P') d_.prefetch_to_gpu(block, kBlockSize / 2);
      }
      if (*s == 'R') kernel(0, n);
      if (*s == 'W') kernel(n, n);
      if (*s == 'w') kernel(n, 2 * n); // the A then the B pages
      d_.synchronize();
      out.push_back(now_ns() - t0);
    }
    d_.free_managed(p_);
    d_.free_managed(scratch);
    return out;
  }

private:
  void kernel(uint64_t first, uint64_t count) { probe::touch_kernel(d_, first, count); }
  [[noreturn]] void fail(const char* what) { probe::fail(d_, what); }
  LiveDevice& d_;
  uint64_t blocks_;
  std::vector<Touch> touches_;
  char* p_ = nullptr;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::printf("usage: discard_history LIB [BLOCKS]\n"), 2;
  const uint64_t blocks = argc > 2 ? std::stoull(argv[2]) : 256;
  LiveDevice& d = *probe::open_device(argv[1]);
  Probe probe(d, blocks);
  std::printf("device: %s, %llu blocks, %llu A pages\n", d.name(),
              static_cast<unsigned long long>(blocks),
              static_cast<unsigned long long>(blocks * kHalf));
  for (const History& h : kHistories) {
    std::vector<std::vector<int64_t>> runs;
    for (int r = 0; r < 3; ++r) runs.push_back(probe.run(h.steps));
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.back() < b.back(); });
    const std::vector<int64_t>& m = runs[1];
    std::printf("%-32s %-7s", h.name, h.steps);
    for (size_t i = 0; i < m.size(); ++i) std::printf("  %c %8.2f ms", h.steps[i], m[i] / 1e6);
    const uint64_t last_pages = blocks * kHalf * (h.steps[m.size() - 1] == 'w' ? 2 : 1);
    std::printf("  | last: %6.1f us a page (runs %.2f %.2f %.2f ms)\n",
                m.back() / 1e3 / static_cast<double>(last_pages), runs[0].back() / 1e6,
                runs[1].back() / 1e6, runs[2].back() / 1e6);
    std::fflush(stdout);
  }
  return 0;
}
