// Issue 21, prefetch-bound runs: under pump at a budget the live replay's kernels that evict
// (resnet50, bert-large, moe: H200 b6da2e9e's per-kernel rows) take ~440 us per block swapped
// in, where the simulator, pricing each call as the calibration measured it alone (an eviction,
// a prefetch of host data, the two in turn), comes to ~330; and the prefetch calls of blocks
// already on the GPU cost 33-43 us each of the CPU in those kernels against 5-6 in kernels that
// do not evict. The calibration never times calls in the replay's order, so this probe does:
// each call of a sequence timed on the CPU, repeated over fresh blocks, then the stream's end.
//   build/probes/call_sequence LIB [ROUNDS]   (default 128 rounds of each sequence)
// LIB: .dev/lib/libfaultline_live.so. Calls: e = a GPU-resident chunk evicted (2 MB to the host),
// m = a block of host data prefetched (2 MB), h = a prefetch of a block already on the GPU.
// One line per sequence: the median CPU ns of each call in its place, and per round the CPU's
// time issuing it and the time to the stream's end (ROUNDS rounds then a synchronize, less an
// empty kernel's launch and wait). Sequences run in alternation, 5 times each, medians kept.
// Every allocation is checked against free memory.
#include "experiments/live/probes/probe_device.h"
#include "sim/core/types.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace faultline::live;
using faultline::kBlockSize;
using probe::now_ns;

namespace {

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  std::vector<std::vector<int64_t>> by_place; // per call in the sequence, its CPU ns each round
  std::vector<int64_t> cpu_per_round, all_per_round;
};

class Probe {
public:
  Probe(LiveDevice& d, uint64_t rounds) : d_(d), rounds_(rounds) {
    const faultline::live::Touch none{0, 0};
    if (!d_.upload_touches(&none, 1)) probe::fail(d_, "uploading touches");
    empty_kernel();
    std::vector<int64_t> t;
    for (int i = 0; i < 21; ++i) {
      const int64_t t0 = now_ns();
      empty_kernel();
      t.push_back(now_ns() - t0);
    }
    kernel_ns_ = median(t);
    held_ = alloc(kHeld);
    d_.prefetch_to_gpu(held_, kHeld * kBlockSize);
    d_.synchronize();
  }

  int64_t kernel_ns() const { return kernel_ns_; }

  // One run of `seq` (letters e, m, h), `rounds_` times over fresh blocks; `kernel_every` > 0
  // launches an empty kernel after that many rounds, as the replay launches a kernel after its
  // calls.
  void run(const std::string& seq, uint64_t kernel_every, Timing& out) {
    char* resident = alloc(rounds_);
    char* host = alloc(rounds_);
    d_.prefetch_to_gpu(resident, rounds_ * kBlockSize); // populated on the GPU
    d_.host_write(host, rounds_ * kBlockSize);          // populated on the host
    d_.synchronize();
    out.by_place.resize(seq.size());
    std::vector<std::vector<int64_t>> place(seq.size());
    int64_t cpu = 0;
    const int64_t t0 = now_ns();
    for (uint64_t r = 0; r < rounds_; ++r) {
      for (size_t i = 0; i < seq.size(); ++i) {
        const int64_t c0 = now_ns();
        if (seq[i] == 'e') d_.evict_to_host(resident + r * kBlockSize, kBlockSize);
        if (seq[i] == 'm') d_.prefetch_to_gpu(host + r * kBlockSize, kBlockSize);
        if (seq[i] == 'h') d_.prefetch_to_gpu(held_ + (next_++ % kHeld) * kBlockSize, kBlockSize);
        const int64_t c = now_ns() - c0;
        place[i].push_back(c);
        cpu += c;
      }
      if (kernel_every && (r + 1) % kernel_every == 0) empty_kernel();
    }
    empty_kernel();
    const int64_t all = now_ns() - t0 - kernel_ns_;
    for (size_t i = 0; i < seq.size(); ++i) out.by_place[i].push_back(median(place[i]));
    out.cpu_per_round.push_back(cpu / static_cast<int64_t>(rounds_));
    out.all_per_round.push_back(all / static_cast<int64_t>(rounds_));
    d_.free_managed(resident);
    d_.free_managed(host);
  }

private:
  static constexpr uint64_t kHeld = 64;

  char* alloc(uint64_t blocks) {
    if (blocks * kBlockSize + (2ull << 30) > d_.free_bytes())
      std::exit((std::printf("refusing: %llu blocks do not fit the GPU's free memory\n",
                             static_cast<unsigned long long>(blocks)),
                 1));
    auto* p = static_cast<char*>(d_.alloc_managed(blocks * kBlockSize));
    if (!p) probe::fail(d_, "allocating");
    return p;
  }
  void empty_kernel() { probe::touch_kernel(d_, 0, 0); }

  LiveDevice& d_;
  uint64_t rounds_;
  int64_t kernel_ns_ = 0;
  char* held_ = nullptr;
  uint64_t next_ = 0;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::printf("usage: call_sequence LIB [ROUNDS]\n"), 2;
  const uint64_t rounds = argc > 2 ? std::stoull(argv[2]) : 128;
  LiveDevice& d = *probe::open_device(argv[1]);
  Probe probe(d, rounds);
  std::printf("device: %s, empty kernel %.1f us, %llu rounds a sequence\n", d.name(),
              probe.kernel_ns() / 1e3, static_cast<unsigned long long>(rounds));
  // The replay's shapes: pump's kernels that evict issue about one eviction, one prefetch of
  // host data and two of held blocks per block swapped in, and a kernel after ~22 of those.
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"h", 0},    {"hh", 0},   {"m", 0},     {"e", 0},      {"em", 0},
      {"me", 0},   {"eh", 0},   {"mh", 0},    {"emh", 0},    {"ehm", 0},
      {"emhh", 0}, {"ehhm", 0}, {"emhh", 22}, {"emhhhh", 0}, {"ehmh", 0}};
  std::map<size_t, Timing> timings;
  for (int rep = 0; rep < 5; ++rep)
    for (size_t i = 0; i < cases.size(); ++i)
      probe.run(cases[i].first, cases[i].second, timings[i]);
  std::printf("%-8s %6s %12s %12s  %s\n", "calls", "kernel", "cpu ns/round", "ns/round",
              "cpu ns each call in place");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Timing& t = timings[i];
    std::string places;
    for (const auto& p : t.by_place) places += " " + std::to_string(median(p));
    std::printf("%-8s %6llu %12lld %12lld %s\n", cases[i].first.c_str(),
                static_cast<unsigned long long>(cases[i].second),
                static_cast<long long>(median(t.cpu_per_round)),
                static_cast<long long>(median(t.all_per_round)), places.c_str());
  }
  return 0;
}
