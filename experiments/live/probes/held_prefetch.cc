// Issue 21, prefetch-bound runs: PUMP's live LSTM runs take 30-36% longer than simulated
// (experiments/live/data/h200-80d0d4ec-holdout3/), and their time is 9.1 M cudaMemPrefetchAsync
// calls of 2 MB blocks already on the GPU, about 930 before each kernel, at 4.1-4.8 us of the
// CPU each, where the calibration prices one at 2.4-3.9 us: 8-128 calls cycling over 64 blocks.
// This probe times such calls as the replay makes them (in a row, then an empty kernel and its
// wait) against the number of blocks they cycle over, the calls before each kernel, and whether
// the blocks are one allocation or one allocation each:
//   build/probes/held_prefetch LIB [MAX_BLOCKS]   (default 8192: 16 GB)
// LIB: .dev/libfaultline_live.so. One line per case: the CPU's ns a call (issuing them) and the
// ns a call to the kernel's end (less an empty kernel's launch and wait), medians of 9 rounds.
// Every allocation is checked against free memory.
#include "experiments/live/probes/probe_device.h"
#include "sim/core/types.h"

#include <string>
#include <vector>

using namespace faultline::live;
using faultline::kBlockSize;
using probe::median;
using probe::now_ns;

namespace {

class Probe {
public:
  explicit Probe(LiveDevice& d) : d_(d), kernel_ns_(probe::empty_kernel_ns(d)) {}

  int64_t kernel_ns() const { return kernel_ns_; }

  // `blocks` 2 MB blocks on the GPU, as one allocation or one each.
  void place(uint64_t blocks, bool one_allocation) {
    if (blocks * kBlockSize + (2ull << 30) > d_.free_bytes())
      std::exit((std::printf("refusing: %llu blocks do not fit the GPU's free memory\n",
                             static_cast<unsigned long long>(blocks)),
                 1));
    if (one_allocation) {
      char* p = static_cast<char*>(d_.alloc_managed(blocks * kBlockSize));
      if (!p) probe::fail(d_, "allocating");
      allocations_.push_back(p);
      for (uint64_t b = 0; b < blocks; ++b) blocks_.push_back(p + b * kBlockSize);
    } else {
      for (uint64_t b = 0; b < blocks; ++b) {
        void* p = d_.alloc_managed(kBlockSize);
        if (!p) probe::fail(d_, "allocating");
        allocations_.push_back(p);
        blocks_.push_back(p);
      }
    }
    for (void* p : blocks_) d_.prefetch_to_gpu(p, kBlockSize);
    d_.synchronize();
  }

  void release() {
    for (void* p : allocations_) d_.free_managed(p);
    allocations_.clear();
    blocks_.clear();
    next_ = 0;
  }

  // Medians over 9 rounds of `calls` calls then an empty kernel: {CPU ns a call, ns a call}.
  std::pair<int64_t, int64_t> round(uint64_t calls) {
    std::vector<int64_t> cpu, all;
    for (int r = 0; r < 9; ++r) {
      const int64_t t0 = now_ns();
      for (uint64_t c = 0; c < calls; ++c) {
        d_.prefetch_to_gpu(blocks_[next_], kBlockSize);
        next_ = (next_ + 1) % blocks_.size();
      }
      const int64_t t1 = now_ns();
      empty_kernel();
      const int64_t t2 = now_ns();
      cpu.push_back((t1 - t0) / static_cast<int64_t>(calls));
      all.push_back((t2 - t0 - kernel_ns_) / static_cast<int64_t>(calls));
    }
    return {median(cpu), median(all)};
  }

private:
  void empty_kernel() { probe::touch_kernel(d_, 0, 0); }
  LiveDevice& d_;
  int64_t kernel_ns_ = 0;
  std::vector<void*> allocations_;
  std::vector<void*> blocks_;
  size_t next_ = 0;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::printf("usage: held_prefetch LIB [MAX_BLOCKS]\n"), 2;
  const uint64_t max_blocks = argc > 2 ? std::stoull(argv[2]) : 8192;
  LiveDevice& d = *probe::open_device(argv[1]);
  Probe probe(d);
  std::printf("device: %s, empty kernel %.1f us\n", d.name(), probe.kernel_ns() / 1e3);
  std::printf("%-16s %7s %6s %12s %12s\n", "layout", "blocks", "calls", "cpu ns/call", "ns/call");
  for (const bool one : {true, false})
    for (uint64_t blocks : {64ull, 512ull, 2048ull, 8192ull}) {
      if (blocks > max_blocks) continue;
      probe.place(blocks, one);
      for (uint64_t calls : {8ull, 128ull, 1024ull}) {
        const auto [cpu, all] = probe.round(calls);
        std::printf("%-16s %7llu %6llu %12lld %12lld\n", one ? "one allocation" : "one per block",
                    static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(calls),
                    static_cast<long long>(cpu), static_cast<long long>(all));
        std::fflush(stdout);
      }
      probe.release();
    }
  return 0;
}
