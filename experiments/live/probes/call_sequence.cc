// Issue 21, prefetch-bound runs: under pump at a budget the live replay's kernels that evict
// (resnet50, bert-large, moe: H200 b6da2e9e's per-kernel rows) take ~440 us per block swapped
// in, where the simulator, pricing each call as the calibration measured it alone (an eviction,
// a prefetch of host data, the two in turn), comes to ~330; and the prefetch calls of blocks
// already on the GPU cost 33-43 us each of the CPU in those kernels against 5-6 in kernels that
// do not evict. The calibration never times calls in the replay's order, so this probe does:
// each call of a sequence timed on the CPU, repeated over fresh blocks, then the stream's end.
// Found (experiments/live/data/h200-020da2e3/): calls return early and a later one blocks for
// the work before it, so the time per round to the stream's end is what a sequence costs.
//   build/probes/call_sequence LIB [ROUNDS]   (default 128 rounds of each sequence)
// LIB: .dev/lib/libfaultline_live.so. Calls: e = a GPU-resident chunk evicted (2 MB to the host),
// m = a block of host data prefetched (2 MB), h = a prefetch of a block already on the GPU.
// One line per sequence: the median CPU ns of each call in its place, and per round the CPU's
// time issuing it and the time to the stream's end (ROUNDS rounds then a synchronize, less an
// empty kernel's launch and wait). Sequences run in alternation, 5 times each, medians kept.
//   build/probes/call_sequence LIB faults [CHUNKS]   (default 256)
// Under ondemand at 50%, resnet50's kernels that evict before they run faulted 16% slower live
// than simulated where those that only fault agreed (H200 69199a4a's per-kernel rows; no other
// run split that way: experiments/live/data/h200-69199a4a/). This mode times a kernel reading
// CHUNKS chunks of host data (every 64 KB page: faults) alone, right after CHUNKS GPU-resident
// chunks were evicted one 2 MB call each, and after such evictions and a 20 ms pause; the three in
// alternation, 7 times, medians. Every allocation is checked against free memory.
#include "experiments/live/probes/probe_device.h"
#include "sim/core/types.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace faultline::live;
using faultline::kBlockSize;
using probe::median;
using probe::now_ns;

namespace {

struct Timing {
  std::vector<std::vector<int64_t>> by_place; // per call in the sequence, its CPU ns each round
  std::vector<int64_t> cpu_per_round, all_per_round;
};

class Probe {
public:
  Probe(LiveDevice& d, uint64_t rounds)
      : d_(d), rounds_(rounds), kernel_ns_(probe::empty_kernel_ns(d)) {
    held_ = alloc(kHeld);
    d_.prefetch_to_gpu(held_, kHeld * kBlockSize);
    d_.synchronize();
  }

  int64_t kernel_ns() const { return kernel_ns_; }

  // The `faults` mode: {kernel after no evictions, after evictions, after evictions and a pause,
  // the evictions' own time}, ns, one round.
  std::vector<int64_t> faults_round(uint64_t chunks) {
    std::vector<faultline::live::Touch> touches;
    for (uint32_t p = 0; p < chunks * faultline::kBigPagesPerBlock; ++p) touches.push_back({0, p});
    if (!d_.upload_touches(touches.data(), touches.size())) probe::fail(d_, "uploading touches");
    std::vector<int64_t> out(4);
    for (int c = 0; c < 3; ++c) {
      char* data = alloc(chunks);
      char* resident = alloc(chunks);
      d_.host_write(data, chunks * kBlockSize);
      d_.prefetch_to_gpu(resident, chunks * kBlockSize);
      d_.synchronize();
      d_.set_slot(0, data, chunks * kBlockSize);
      if (c > 0) {
        const int64_t t0 = now_ns();
        for (uint64_t k = 0; k < chunks; ++k)
          d_.evict_to_host(resident + k * kBlockSize, kBlockSize);
        out[3] = now_ns() - t0;
        if (c == 2) {
          d_.synchronize();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      const int64_t t0 = now_ns();
      probe::touch_kernel(d_, 0, touches.size());
      out[c] = now_ns() - t0;
      d_.free_managed(data);
      d_.free_managed(resident);
    }
    const faultline::live::Touch none{0, 0};
    if (!d_.upload_touches(&none, 1)) probe::fail(d_, "uploading touches");
    return out;
  }

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

// The `faults` mode's lines: per case the kernel's medians, ns a chunk.
int faults_mode(LiveDevice& d, uint64_t chunks) {
  Probe probe(d, 1);
  std::vector<std::vector<int64_t>> by_case(4);
  for (int r = 0; r < 7; ++r) {
    const std::vector<int64_t> round = probe.faults_round(chunks);
    for (size_t c = 0; c < round.size(); ++c) by_case[c].push_back(round[c]);
  }
  const char* names[] = {"kernel alone", "kernel right after evictions",
                         "kernel after evictions and 20 ms", "the evictions"};
  std::printf("device: %s, %llu chunks of host data read (faults), %llu evicted before\n", d.name(),
              static_cast<unsigned long long>(chunks), static_cast<unsigned long long>(chunks));
  for (size_t c = 0; c < by_case.size(); ++c)
    std::printf("%-34s %10lld ns a chunk\n", names[c],
                static_cast<long long>(median(by_case[c]) / static_cast<int64_t>(chunks)));
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return std::printf("usage: call_sequence LIB [ROUNDS] | LIB faults [CHUNKS]\n"), 2;
  LiveDevice& d = *probe::open_device(argv[1]);
  if (argc > 2 && std::string(argv[2]) == "faults")
    return faults_mode(d, argc > 3 ? std::stoull(argv[3]) : 256);
  const uint64_t rounds = argc > 2 ? std::stoull(argv[2]) : 128;
  Probe probe(d, rounds);
  std::printf("device: %s, empty kernel %.1f us, %llu rounds a sequence\n", d.name(),
              probe.kernel_ns() / 1e3, static_cast<unsigned long long>(rounds));
  // The replay's shapes: pump's kernels that evict issue about one eviction, one prefetch of
  // host data and two of held blocks per block swapped in, and a kernel after ~22 of those.
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"h", 0},    {"hh", 0},   {"m", 0},     {"e", 0},      {"em", 0},
      {"me", 0},   {"eh", 0},   {"mh", 0},    {"emh", 0},    {"ehm", 0},
      {"emhh", 0}, {"ehhm", 0}, {"emhh", 22}, {"emhhhh", 0}, {"ehmh", 0}};
  std::vector<Timing> timings(cases.size());
  for (int rep = 0; rep < 5; ++rep)
    for (size_t i = 0; i < cases.size(); ++i)
      probe.run(cases[i].first, cases[i].second, timings[i]);
  std::printf("%-8s %6s %12s %12s  %s\n", "calls", "kernel", "cpu ns/round", "ns/round",
              "cpu ns each call in place");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Timing& t = timings[i];
    std::string places;
    for (const auto& p : t.by_place) (places += ' ') += std::to_string(median(p));
    std::printf("%-8s %6llu %12lld %12lld %s\n", cases[i].first.c_str(),
                static_cast<unsigned long long>(cases[i].second),
                static_cast<long long>(median(t.cpu_per_round)),
                static_cast<long long>(median(t.all_per_round)), places.c_str());
  }
  return 0;
}
